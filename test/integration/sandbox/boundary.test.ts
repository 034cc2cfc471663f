// The sandbox's operating-system boundary against an attacker who already owns the JavaScript around Python
// (what the Pyodide lock-down exists to prevent): a script run with the same launch and Node flags as a
// sandbox process tries to start a program, read the service's environment, signal it, reach a loopback port
// and a local socket, write a file, load native code, start a worker and take memory. Each must fail; the
// same script run as a plain process does all of it, so the test fails when the boundary is off.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confinedNode, findIsolation, type Isolation } from '../../../shared/sandbox/isolation.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
/** Beside the sandbox's own scripts (never in a directory the boundary empties). */
const DIR = path.join(ROOT, 'node_modules', '.cache', 'agent-platform', 'boundary-test');
const MARKER = path.join(DIR, 'marker.txt');
const run = promisify(execFile);
/** A local service's socket where no directory of the boundary's own is: beside the test's files. */
const SOCKET = path.join(ROOT, 'node_modules', '.cache', 'agent-platform', `boundary-${process.pid}.sock`);

/** What the attacker tries, each answering what happened: 'refused: <why>' or what it got. */
const ATTACK = String.raw`
const [port, socketPath, servicePid, marker] = process.argv.slice(2);
const fs = process.getBuiltinModule('node:fs');
const results = {};
const attempt = async (name, f) => {
  try {
    results[name] = String(await f()).slice(0, 200);
  } catch (e) {
    results[name] = 'refused: ' + (e.code || e.message);
  }
};
await attempt('program', () =>
  process.getBuiltinModule('node:child_process').execSync('id > ' + marker + '; id').toString());
await attempt('spawnBinding', () => typeof process.binding('spawn_sync').spawn);
await attempt('environ', () => fs.readFileSync('/proc/' + servicePid + '/environ', 'utf8'));
await attempt('passwd', () => fs.readFileSync('/etc/passwd', 'utf8'));
await attempt('write', () => { fs.writeFileSync(marker + '.written', 'x'); return 'written'; });
await attempt('signal', () => { process.kill(Number(servicePid), 0); return 'signalled'; });
await attempt('worker', () => {
  new (process.getBuiltinModule('node:worker_threads').Worker)('1', { eval: true });
  return 'started';
});
await attempt('addon', () => { process.dlopen({ exports: {} }, '/lib/x86_64-linux-gnu/libc.so.6'); return 'loaded'; });
await attempt('wasi', () => {
  new (process.getBuiltinModule('node:wasi').WASI)({ version: 'preview1', preopens: { '/': '/' } });
  return 'made';
});
await attempt('eval', () => new Function('return "made code"')());
const connect = (options) => new Promise((resolve, reject) => {
  const s = process.getBuiltinModule('node:net').connect(options);
  s.once('connect', () => { s.destroy(); resolve('connected'); });
  s.once('error', reject);
});
await attempt('loopback', () => connect({ host: '127.0.0.1', port: Number(port) }));
await attempt('socket', () => connect({ path: socketPath }));
await attempt('bind', () => new Promise((resolve, reject) => {
  const server = process.getBuiltinModule('node:net').createServer();
  server.once('error', reject);
  server.listen(marker + '.sock', () => { server.close(); resolve('a socket file made'); });
}));
process.stdout.write(JSON.stringify(results));
`;

const HOG = String.raw`
const held = [];
for (let i = 0; i < 1024; i++) { const b = new Uint8Array(2 ** 20); b.fill(1); held.push(b); }
process.stdout.write('held ' + held.length + ' MiB');
`;

describe('the sandbox boundary', () => {
  let isolation: Isolation;
  let tcp: net.Server;
  let unix: net.Server;
  const reached: string[] = [];
  const files = { attack: path.join(DIR, 'attack.mjs'), hog: path.join(DIR, 'hog.mjs') };

  beforeAll(async () => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(files.attack, ATTACK);
    writeFileSync(files.hog, HOG);
    const listen = (server: net.Server, ...at: unknown[]) =>
      new Promise<void>((resolve) => server.listen(...(at as [number, string]), resolve));
    tcp = net.createServer((s) => (reached.push('tcp'), s.destroy()));
    unix = net.createServer((s) => (reached.push('unix'), s.destroy()));
    await listen(tcp, 0, '127.0.0.1');
    rmSync(SOCKET, { force: true });
    await listen(unix, SOCKET);
    isolation = await findIsolation([`${DIR}${path.sep}`], false);
  });
  afterAll(() => {
    tcp.close();
    unix.close();
    rmSync(DIR, { recursive: true, force: true });
  });

  /** Runs the attack (the event loop free meanwhile, so the listeners note every connection). */
  const attack = async (launch: { command: string; args: string[] }) => {
    for (const f of [MARKER, `${MARKER}.written`, `${MARKER}.sock`]) rmSync(f, { force: true });
    const args = [String((tcp.address() as net.AddressInfo).port), SOCKET, String(process.pid), MARKER];
    const { stdout } = await run(launch.command, [...launch.args, ...args], { env: {}, timeout: 30_000 });
    return JSON.parse(stdout) as Record<string, string>;
  };

  it('refuses every way out to a script that holds all of JavaScript', async () => {
    const results = await attack(
      isolation.launch([...confinedNode([`${DIR}${path.sep}`]), files.attack], 512 * 2 ** 20),
    );
    for (const [name, outcome] of Object.entries(results)) expect(outcome, name).toMatch(/^refused: /);
    expect(results.loopback).toBe('refused: ENETUNREACH');
    expect(results.socket).toBe('refused: ENOENT');
    expect(results.signal).toBe('refused: ESRCH');
    expect(results.bind).toMatch(/^refused: (EROFS|EACCES|ENOENT)$/);
    expect(existsSync(MARKER)).toBe(false);
    expect(reached).toEqual([]);
  });

  it('is what stops it: the same script as a plain process runs a program, connects and signals', async () => {
    const results = await attack({ command: process.execPath, args: [files.attack] });
    expect(results.program).toMatch(/uid=/);
    expect(existsSync(MARKER)).toBe(true);
    expect(results.loopback).toBe('connected');
    expect(results.socket).toBe('connected');
    expect(results.signal).toBe('signalled');
    expect(results.bind).toBe('a socket file made');
    expect(reached.sort()).toEqual(['tcp', 'unix']);
    reached.length = 0;
  });

  it('ends a process that takes more memory than its limit', async () => {
    const hog = (launch: { command: string; args: string[] }) =>
      run(launch.command, launch.args, { env: {}, timeout: 30_000 }).then(
        ({ stdout }) => stdout,
        (e: unknown) =>
          `ended: ${String((e as { signal?: string; code?: number }).signal ?? (e as { code?: number }).code)}`,
      );
    expect(await hog(isolation.launch([...confinedNode([`${DIR}${path.sep}`]), files.hog], 512 * 2 ** 20))).toMatch(
      /^ended: /,
    );
    expect(await hog({ command: process.execPath, args: [files.hog] })).toBe('held 1024 MiB');
  });
});
