// Runs the project's own scripts as child processes, the way a user does: one Node process each (tsx as an
// in-process loader, not a wrapper that spawns the real process), so a signal reaches the script itself.
// Every child carries the test run's marker in its environment; the suite's teardown finds any left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { inject } from 'vitest';

export interface Running {
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** The environment variable that marks processes started by this test run. */
export const RUN_MARKER = 'AGENT_PLATFORM_TEST_RUN';

const command = (name: string, args: string[] = []) =>
  [process.execPath, ['--import', 'tsx', `scripts/${name}.ts`, ...args]] as const;
const environment = (env: Record<string, string>) => ({ ...process.env, ...env, [RUN_MARKER]: inject('testRunId') });

/** Stops a child: SIGTERM, then SIGKILL if it is still there after `graceMs`. */
export function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Starts `scripts/<name>.ts` and resolves once its output matches `ready`. */
export function startScript(
  name: string,
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 30_000,
): Promise<Running> {
  return startProcess(name, command(name), env, ready, timeoutMs);
}

/** Starts what `npm start` runs, the bundle `npm run build` makes (dist/bundle/start.js), as `startScript` does. */
export function startBuilt(env: Record<string, string>, ready: RegExp, timeoutMs = 30_000): Promise<Running> {
  return startProcess('dist/bundle/start.js', [process.execPath, ['dist/bundle/start.js']], env, ready, timeoutMs);
}

async function startProcess(
  name: string,
  [node, args]: readonly [string, readonly string[]],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs: number,
): Promise<Running> {
  const child = spawn(node, args, { env: environment(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      void stopChild(child, 1000);
      reject(new Error(`${name} not ready in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const check = () => {
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}:\n${out}`));
    });
  });
  return { child, output: () => out, stop: () => stopChild(child) };
}

/** Runs `scripts/<name>.ts` to completion; resolves with its exit code, stdout and stderr. */
export function runScript(
  name: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const [node, argv] = command(name, args);
    const child = spawn(node, argv, { env: environment(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
