// The APIs' paths as the portal's clients take them. Every route the portal calls is under
// /instances/{instanceId}, and the portal only ever calls its own instance: the clients' base URLs name it, so
// their paths are the documents' own with that prefix, and the instance among the path parameters, taken off.

type Prefix = '/instances/{instanceId}';

/** Path parameters left once the instance is off: none left asks for no `path` at all, as openapi-fetch expects. */
type PathParameters<P> = keyof P extends never ? { path?: never } : { path: P };

/** An operation whose path parameters no longer include the instance. */
type Unscoped<Operation> = Operation extends { parameters: infer Parameters extends { path?: unknown } }
  ? {
      [K in keyof Operation]: K extends 'parameters'
        ? Omit<Parameters, 'path'> & PathParameters<Omit<NonNullable<Parameters['path']>, 'instanceId'>>
        : Operation[K];
    }
  : Operation;

/** The paths of a document under the instance, each without its prefix. */
export type InstancePaths<Paths> = {
  [P in keyof Paths as P extends `${Prefix}${infer Rest}` ? Rest : never]: {
    [M in keyof Paths[P]]: Unscoped<Paths[P][M]>;
  };
};
