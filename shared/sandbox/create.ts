// The sandbox this instance runs plugins in: the session pool when PLUGIN_SESSIONS_ENDPOINT is set (Azure),
// otherwise Pyodide worker threads on this machine.
import type { Config } from '../config.js';
import type { CredentialGate } from '../net/credential-gate.js';
import { PyodideSandbox } from './pyodide-sandbox.js';
import type { Sandbox, SandboxLimits } from './sandbox.js';
import { SessionsSandbox } from './sessions-sandbox.js';

/** Bytes a call may print: far more than a model is shown (the code interpreter keeps 20000 characters). */
const OUTPUT_BYTES = 1024 * 1024;

export function createSandbox(config: Config, gate: CredentialGate): Sandbox {
  const { timeoutMs, memoryBytes, sessionsEndpoint, warm, concurrency } = config.plugins;
  const limits: SandboxLimits = { timeoutMs, memoryBytes, scratchBytes: memoryBytes, outputBytes: OUTPUT_BYTES };
  if (sessionsEndpoint) return new SessionsSandbox({ endpoint: sessionsEndpoint, token: () => gate.bearer('sessions', sessionsEndpoint), limits });
  return new PyodideSandbox({ limits, warm, concurrency });
}
