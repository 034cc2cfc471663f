// Types for the undici modules shared/net/undici.ts loads one by one, from undici's published types.
declare module 'undici/lib/dispatcher/agent.js' {
  import { Agent } from 'undici';
  export default Agent;
}
declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  export default function request(
    this: Dispatcher,
    options: Dispatcher.RequestOptions,
  ): Promise<Dispatcher.ResponseData>;
}
declare module 'undici/lib/core/errors.js' {
  import { errors } from 'undici';
  export default errors;
}
