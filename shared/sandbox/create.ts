// The sandbox this instance runs plugins in: the session pool when PLUGIN_SESSIONS_ENDPOINT is set (Azure),
// otherwise Pyodide in isolated processes on this machine.
import type { Config } from '../config.js';
import type { Log } from '../log.js';
import type { CredentialGate } from '../net/credential-gate.js';
import { PyodideSandbox } from './pyodide-sandbox.js';
import type { Sandbox, SandboxLimits } from './sandbox.js';
import { SessionsSandbox } from './sessions-sandbox.js';

/** Bytes a call may print: far more than a model is shown (the code interpreter keeps 20000 characters). */
const OUTPUT_BYTES = 1024 * 1024;
/** Bytes of files a call may give back (each becomes an upload of the caller). */
const FILES_BYTES = 32 * 1024 * 1024;

export function createSandbox(config: Config, gate: CredentialGate, log: Log): Sandbox {
  const { timeoutMs, memoryBytes, sessionsEndpoint, warm, concurrency, allowNetwork } = config.plugins;
  const limits: SandboxLimits = {
    timeoutMs,
    memoryBytes,
    scratchBytes: memoryBytes,
    outputBytes: OUTPUT_BYTES,
    filesBytes: FILES_BYTES,
  };
  if (sessionsEndpoint)
    return new SessionsSandbox({
      endpoint: sessionsEndpoint,
      token: () => gate.bearer('sessions', sessionsEndpoint),
      limits,
    });
  return new PyodideSandbox({ limits, warm, concurrency, allowNetwork, log });
}
