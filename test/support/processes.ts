// Runs the project's own scripts as child processes, the way a user does.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';

const tsx = createRequire(import.meta.url).resolve('tsx/cli');

export interface Running {
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** Starts `scripts/<name>.ts` and resolves once its output matches `ready`. */
export async function startScript(name: string, env: Record<string, string>, ready: RegExp, timeoutMs = 30_000): Promise<Running> {
  const child = spawn(process.execPath, [tsx, `scripts/${name}.ts`], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} not ready in ${timeoutMs} ms:\n${out}`)), timeoutMs);
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
  return { child, output: () => out, stop };
}

/** Runs `scripts/<name>.ts` to completion; resolves with its exit code, stdout and stderr. */
export function runScript(name: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tsx, `scripts/${name}.ts`, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
