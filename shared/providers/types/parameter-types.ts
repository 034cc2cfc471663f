// The parameter types of plugins and agent templates (spec 2.11), and how a value is checked against one.

export const PARAMETER_TYPES = ['string', 'int', 'float', 'bool', 'datetime', 'array', 'resource-object-id'] as const;
export type ParameterType = (typeof PARAMETER_TYPES)[number];

const OBJECT_ID = /^\/instances\/[^/]+\/providers\/Svc\.[A-Za-z]+\/[A-Za-z]+\/[^/]+$/;

/** Per type: whether a value is of it, and how a message names it. */
export const TYPE_CHECKS: Record<ParameterType, [(v: unknown) => boolean, string]> = {
  string: [(v) => typeof v === 'string', 'a string'],
  int: [(v) => Number.isInteger(v), 'an integer'],
  float: [(v) => typeof v === 'number' && Number.isFinite(v), 'a number'],
  bool: [(v) => typeof v === 'boolean', 'true or false'],
  datetime: [(v) => typeof v === 'string' && !Number.isNaN(Date.parse(v)), 'an ISO 8601 date and time'],
  array: [(v) => Array.isArray(v), 'an array'],
  'resource-object-id': [
    (v) => typeof v === 'string' && OBJECT_ID.test(v),
    'a resource object id (/instances/{id}/providers/Svc.{Provider}/{type}/{name})',
  ],
};
