// Background work on a clock, beside the queue handlers: a timer trigger in Azure Functions, an interval in
// the standalone server. Both run it only where the queue workers run (the Core API with QUEUE_WORKERS).
import type { Services } from '../services.js';

export interface Timer {
  /** The Functions name of the trigger. */
  name: string;
  /** When the Functions timer trigger fires: NCRONTAB, six fields with seconds first. */
  schedule: string;
  /** How often the standalone server runs it. */
  everyMs: number;
  run(s: Services): Promise<void>;
  /**
   * Stands in for an Azure service where there is none (Event Grid): the standalone server runs it, Azure Functions
   * does not.
   */
  standaloneOnly?: boolean;
}
