// Structured logging with pino: one JSON line per record on stderr, which both hosts collect (Application
// Insights and the Functions host read stderr), or pino-pretty's readable lines on a terminal. Records carry
// the correlation dimensions (Svc-OperationId, ...) of the active context. LOG_LEVEL sets the threshold.
import { createRequire } from 'node:module';
import pino from 'pino';
import type { PrettyOptions } from 'pino-pretty';
import { dimensionsOf } from './telemetry/correlation.js';

export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFormat = 'json' | 'pretty';

/** pino-pretty writing to stderr, loaded only when asked for (it is not needed on a server). */
function prettyStream(): NodeJS.WritableStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (options: PrettyOptions) => NodeJS.WritableStream;
  return pretty({
    destination: process.stderr,
    sync: true,
    colorize: process.stderr.isTTY,
    singleLine: true,
    errorLikeObjectKeys: [],
    messageKey: 'message',
    translateTime: 'SYS:HH:MM:ss.l',
  });
}

/**
 * A logger writing at `level` and above (`quiet` is `level: 'warn'`): JSON lines, or readable lines with
 * `format: 'pretty'` (the default when stderr is a terminal).
 */
export function createLog(options: { quiet?: boolean; level?: LogLevel; format?: LogFormat } = {}): Log {
  const pretty = (options.format ?? (process.stderr.isTTY ? 'pretty' : 'json')) === 'pretty';
  const logger = pino(
    {
      level: options.level ?? (options.quiet ? 'warn' : 'info'),
      base: undefined,
      messageKey: 'message',
      // JSON: the level's name and an ISO time, as log stores expect; pretty: pino's own, which it formats.
      ...(pretty
        ? {}
        : {
            timestamp: () => `,"time":"${new Date().toISOString()}"`,
            formatters: { level: (label: string) => ({ level: label }) },
          }),
      mixin: () => dimensionsOf(),
    },
    // The stream, not a file descriptor: whatever stderr is (a test's capture, the host's pipe).
    pretty ? prettyStream() : process.stderr,
  );
  return {
    info: (m, f) => logger.info(f ?? {}, m),
    warn: (m, f) => logger.warn(f ?? {}, m),
    error: (m, f) => logger.error(f ?? {}, m),
  };
}
