// Structured logging with pino: one JSON line per record on stderr, which both hosts collect (Application
// Insights and the Functions host read stderr; a terminal shows it as it is). Records carry the correlation
// dimensions (Svc-OperationId, ...) of the active context. LOG_LEVEL sets the threshold.
import pino from 'pino';
import { dimensionsOf } from './telemetry/correlation.js';

export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A logger writing JSON lines at `level` and above; `quiet` is `level: 'warn'`. */
export function createLog(options: { quiet?: boolean; level?: LogLevel } = {}): Log {
  const logger = pino(
    {
      level: options.level ?? (options.quiet ? 'warn' : 'info'),
      base: undefined,
      messageKey: 'message',
      timestamp: () => `,"time":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => dimensionsOf(),
    },
    // The stream, not a file descriptor: whatever stderr is (a test's capture, the host's pipe).
    process.stderr,
  );
  return {
    info: (m, f) => logger.info(f ?? {}, m),
    warn: (m, f) => logger.warn(f ?? {}, m),
    error: (m, f) => logger.error(f ?? {}, m),
  };
}
