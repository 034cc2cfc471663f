// Structured logging: one JSON line per record on stderr, which both hosts collect. Records carry the
// correlation dimensions (Svc-OperationId, ...) of the active context.
import { dimensionsOf } from './telemetry/correlation.js';

export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger writing JSON lines; `quiet` drops info records. */
export function createLog(options: { quiet?: boolean } = {}): Log {
  const write = (level: string, message: string, fields?: Record<string, unknown>) =>
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...dimensionsOf(), ...fields })}\n`);
  return {
    info: (m, f) => {
      if (!options.quiet) write('info', m, f);
    },
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}
