// The README's quick start, as a new user runs it: its commands, as written there, in a fresh clone of the
// repository (what is committed, nothing of this working tree's build or data): a clean install, the
// service, the mock model, and the first agent created and answering. Then a second start with nothing
// changed, which must not build again; the time to its first answer is printed (a figure, not a threshold).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const README = readFileSync('README.md', 'utf8');

/** The commands of the README's walkthrough block, comments dropped. */
function walkthrough(): string[] {
  const marked = README.indexOf('<!-- walkthrough');
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(marked));
  if (marked < 0 || !block?.[1]) throw new Error('the README has no walkthrough block');
  return block[1]
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter(Boolean);
}

/** The test run's own settings stay out: the clone runs as a user's shell would run it. */
const userEnv = (): NodeJS.ProcessEnv => {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(VITEST|AGENT_PLATFORM|NODE_OPTIONS|TEST)/.test(k) && k !== 'NODE_ENV',
    ),
  );
  // The packages come from npm's cache when it has them (the outer install filled it): the same install.
  return { ...env, npm_config_prefer_offline: 'true', npm_config_fund: 'false', npm_config_audit: 'false' };
};

interface Background {
  child: ChildProcess;
  output: () => string;
}

/** A long-running command in its own process group (npm starts node below it), resolved once ready. */
async function background(command: string, cwd: string, ready: RegExp, timeoutMs: number): Promise<Background> {
  const child = spawn(command, { cwd, shell: true, detached: true, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let out = '';
  const collect = (d: Buffer) => (out += d.toString());
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${command}: not ready in ${timeoutMs} ms:\n${out.slice(-3000)}`)),
      timeoutMs,
    );
    const check = () => ready.test(out) && (clearTimeout(timer), resolve());
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.once(
      'exit',
      (code) => (clearTimeout(timer), reject(new Error(`${command} exited with ${code}:\n${out.slice(-3000)}`))),
    );
  });
  return { child, output: () => out };
}

const running: ChildProcess[] = [];
const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return resolve();
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid ?? 0), 'SIGKILL');
      } catch {
        // gone already
      }
    }, 15_000);
    child.once('exit', () => (clearTimeout(timer), resolve()));
    process.kill(-child.pid, 'SIGTERM');
  });

describe("the README's quick start, in a fresh clone", () => {
  const clone = mkdtempSync(path.join(tmpdir(), 'walkthrough-'));
  afterAll(async () => {
    await Promise.all(running.map(stop));
    // npm may exit before what it started: anything still running from the clone (the service's Azurite, in
    // a process group of its own) is stopped and waited for before its files are removed.
    for (let tries = 0; spawnSync('pgrep', ['-f', clone]).status === 0 && tries < 40; tries++) {
      spawnSync('pkill', [tries < 20 ? '-TERM' : '-KILL', '-f', clone]);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    rmSync(clone, { recursive: true, force: true, maxRetries: 10, retryDelay: 500 });
  });

  it(
    'ends with the first agent answering, and a second start that does not build again',
    { timeout: 900_000 },
    async () => {
      const commands = walkthrough();
      // The shape this test knows how to run: an install, then the service, the model, and the first agent.
      expect(commands).toEqual(['npm ci', 'npm start', 'npm run mock-llm', 'npm run first-agent']);
      const [install, start, model, firstAgent] = commands as [string, string, string, string];

      expect(spawnSync('git', ['clone', '--quiet', process.cwd(), clone]).status).toBe(0);
      const installed = spawnSync(install, {
        cwd: clone,
        shell: true,
        env: userEnv(),
        encoding: 'utf8',
        timeout: 600_000,
      });
      expect(installed.status, installed.stderr.slice(-3000)).toBe(0);

      const service = await background(start, clone, /Get a token/, 300_000);
      await background(model, clone, /Mock OpenAI-compatible server/, 60_000);
      const asked = spawnSync(firstAgent, {
        cwd: clone,
        shell: true,
        env: userEnv(),
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(asked.status, `${asked.stdout}\n${asked.stderr}`).toBe(0);
      // The resources it made, the agent's answer (the mock model echoes the question), the session and tokens.
      expect(asked.stdout).toContain('Svc.Agent/agents/first-agent');
      expect(asked.stdout).toContain('Hello! Who are you?');
      expect(asked.stderr).toMatch(/session [0-9a-f-]{36}/);
      expect(asked.stderr).toMatch(/tokens {2}\d+ prompt \+ \d+ completion = \d+/);
      expect(service.output()).toMatch(/Building/);

      // A second start with nothing changed: no build, and the time to its first answer.
      await stop(service.child);
      const started = performance.now();
      const again = await background(start, clone, /Get a token/, 60_000);
      let answered = false;
      while (!answered)
        answered = await fetch('http://127.0.0.1:7071/status').then(
          (r) => r.ok,
          () => false,
        );
      const seconds = (performance.now() - started) / 1000;
      process.stdout.write(`walkthrough: second npm start answered its first request after ${seconds.toFixed(2)} s\n`);
      expect(again.output()).toContain('Sources unchanged since the last build');
      expect(again.output()).not.toMatch(/Building/);
    },
  );
});
