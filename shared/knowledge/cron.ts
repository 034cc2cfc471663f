// Cron expressions of scheduled pipelines: five fields, UTC, read by cron-parser.
import { CronExpressionParser } from 'cron-parser';

/** Why a cron expression cannot schedule a pipeline, or undefined when it can. */
export function cronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5)
    return `trigger_cron has ${fields.length} fields; it takes five (minute hour day-of-month month day-of-week, UTC)`;
  try {
    CronExpressionParser.parse(expression, { tz: 'UTC' });
    return undefined;
  } catch (e) {
    return `trigger_cron is not a valid cron expression: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** The latest due time of the expression at or before `now`. */
export function lastDue(expression: string, now: Date): Date {
  // A due time equal to now counts: the parser's prev() is strictly before its current date.
  return CronExpressionParser.parse(expression, { tz: 'UTC', currentDate: new Date(now.getTime() + 1) })
    .prev()
    .toDate();
}
