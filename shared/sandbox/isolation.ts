// The operating-system boundary around each sandbox process on Linux, made with util-linux (`unshare`,
// `mount`, `pivot_root`, `setpriv`) and the shell: the process has a network namespace of its own (no
// interface but a loopback that is down: every connection fails with ENETUNREACH), a process namespace of its
// own (it sees and can signal no other process), a mount namespace whose root holds only the system's
// programs and libraries, Node, Pyodide and the sandbox's own script, all read-only (no local socket, no file
// of the service's, nowhere to write), no capabilities and no way to gain any, a cap on the memory it may map
// for data, and, when the service runs as root, the unprivileged user `nobody`. Inside, Node's permission
// model refuses child processes, workers, native addons, WASI and file access beyond Pyodide's and the
// script's (pyodide-process.ts). Where no such boundary can be made (another operating system, a container
// without user namespaces), untrusted code does not run unless the operator accepts, by
// PLUGIN_SANDBOX_ALLOW_NETWORK=true, that it can reach the network (docs/plugins.md, SECURITY.md).
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** How to start a program. */
export interface Launch {
  command: string;
  args: string[];
}

export interface Isolation {
  /** What holds around each process, in words, for the operator's log. */
  layers: string[];
  /** The command that runs `node` with `nodeArgs` inside the boundary, with `dataBytes` of data memory at most. */
  launch(nodeArgs: readonly string[], dataBytes: number): Launch;
  /** Whether the process is started by a wrapper, so its Node process is the wrapper's child rather than itself. */
  wrapped: boolean;
}

/** The system's programs and libraries, as the new root shows them (read-only, or as the same links). */
const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc/ld.so.cache'];
/** Devices a Node process opens. */
const DEVICES = ['/dev/null', '/dev/zero', '/dev/random', '/dev/urandom'];
/** Where the new root is made: an existing directory that holds none of what it shows. */
const ROOT_MOUNTS = ['/dev/shm', '/mnt', '/media', '/srv', '/opt', '/tmp'];
const NOBODY = 65534;

/** A shell string of one argument. */
const quoted = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * The Node flags that confine a sandbox process: the permission model, reads of `readable` only, no code from strings.
 */
export function confinedNode(readable: readonly string[]): string[] {
  const permission = process.allowedNodeEnvironmentFlags.has('--permission')
    ? '--permission'
    : '--experimental-permission';
  return [
    permission,
    ...readable.map((p) => `--allow-fs-read=${p}`),
    '--disallow-code-generation-from-strings',
    '--no-addons',
    '--no-warnings',
  ];
}

/** The shell lines that show `source` at the same path inside the new root `root`, read-only. */
function shown(root: string, source: string): string[] {
  if (!existsSync(source)) return [];
  const stat = lstatSync(source);
  const at = quoted(`${root}${source}`);
  const parent = `mkdir -p ${quoted(`${root}${path.dirname(source)}`)}`;
  if (stat.isSymbolicLink()) return [parent, `ln -s ${quoted(readlinkSync(source))} ${at}`];
  return [
    ...(stat.isDirectory() ? [`mkdir -p ${at}`] : [parent, `touch ${at}`]),
    `mount --bind ${quoted(source)} ${at}`,
    `mount -o remount,bind,ro,nosuid ${at}`,
  ];
}

/**
 * The Linux boundary for processes that read `readable` (files or directories with a final separator): a
 * shell script, run by `unshare` in the new namespaces, builds the root and drops to the process.
 */
function namespaces(readable: readonly string[]): Isolation {
  const root = process.getuid?.() === 0;
  const needed = readable.map((p) => p.replace(/\/+$/, ''));
  // Node itself, where it is installed outside the system's directories (nvm, a tarball): its whole prefix.
  const node = realpathSync(process.execPath);
  const nodeHome = SYSTEM.some((d) => node.startsWith(`${d}/`)) ? [] : [path.dirname(path.dirname(node))];
  // The new root is a tmpfs mounted there (pivot_root takes a mount point).
  const newRoot =
    ROOT_MOUNTS.find((d) => existsSync(d) && ![...needed, ...nodeHome].some((p) => p.startsWith(`${d}/`))) ?? '/mnt';
  // One command a line: `set -e` ends the script at any that fails (it would not inside an && list).
  const lines = [
    `mount -t tmpfs -o size=1m,mode=0755 sandbox-root ${quoted(newRoot)}`,
    `mkdir -p ${['proc', 'dev', 'tmp', '.old'].map((d) => quoted(`${newRoot}/${d}`)).join(' ')}`,
    ...[...SYSTEM, ...nodeHome, ...needed].flatMap((p) => shown(newRoot, p)),
    ...DEVICES.flatMap((d) => [`touch ${quoted(`${newRoot}${d}`)}`, `mount --bind ${d} ${quoted(`${newRoot}${d}`)}`]),
    `mount --rbind /proc ${quoted(`${newRoot}/proc`)}`,
    `cd ${quoted(newRoot)}`,
    'pivot_root . .old',
    'umount -l /.old',
    'rmdir /.old',
    'mount -o remount,bind,ro /',
  ];
  // As root the process drops to nobody; otherwise a user namespace gives it the right to make the others.
  const unshare = [
    '--mount',
    '--net',
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    ...(root ? [] : ['--user', '--map-root-user']),
  ];
  const user = root ? [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'] : [];
  const setpriv = ['setpriv', ...user, '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'];
  return {
    layers: [
      'a process per call, killed with everything it started at its deadline',
      'a network namespace of its own (no network)',
      'a process namespace of its own',
      "a root of its own: the system's programs and libraries, Node, Pyodide and the sandbox's script, read-only",
      root ? 'the user nobody, no capabilities' : 'a user namespace, no capabilities',
      'a data memory limit (RLIMIT_DATA)',
      "Node's permission model: no child processes, workers, addons or file access beyond Pyodide's and the script's",
    ],
    wrapped: true,
    launch(nodeArgs, dataBytes) {
      const script = [
        `ulimit -c 0 && ulimit -d ${Math.ceil(dataBytes / 1024)} || exit 96`,
        'set -e',
        ...lines,
        `exec ${setpriv.map(quoted).join(' ')} "$@"`,
      ].join('\n');
      return { command: 'unshare', args: [...unshare, '--', 'sh', '-c', script, 'sandbox', node, ...nodeArgs] };
    },
  };
}

/** No boundary but the process and Node's permission model: only where the operator accepted the network risk. */
const processOnly: Isolation = {
  layers: [
    'a process per call, killed at its deadline',
    "Node's permission model",
    'NO network isolation (PLUGIN_SANDBOX_ALLOW_NETWORK=true)',
  ],
  wrapped: false,
  launch: (nodeArgs) => ({ command: process.execPath, args: [...nodeArgs] }),
};

/** Why untrusted code cannot run here, for the call that asked and for the operator. */
export class IsolationUnavailable extends Error {}

/**
 * The strongest boundary this machine can make for processes that read `readable`, found by starting one:
 * the namespaces on Linux; else, with `allowNetwork`, the process alone; else IsolationUnavailable.
 */
export async function findIsolation(readable: readonly string[], allowNetwork: boolean): Promise<Isolation> {
  const candidate = namespaces(readable);
  // The probe reads each file the real process will read, as the user it will run as.
  const check =
    `const fs = require('node:fs'); for (const p of ${JSON.stringify(readable)}) fs.accessSync(p, ` +
    `fs.constants.R_OK)`;
  const failure =
    process.platform === 'linux'
      ? await tryLaunch(candidate.launch([...confinedNode(readable), '-e', check], 512 * 1024 * 1024))
      : `${process.platform} has no Linux namespaces`;
  if (failure === undefined) return candidate;
  if (allowNetwork) return processOnly;
  throw new IsolationUnavailable(
    `untrusted code cannot run on this machine: the sandbox could not isolate it from the network ` +
      `(${failure}). Run the service where unshare can make namespaces (docs/plugins.md), use the Azure session ` +
      `pool (PLUGIN_SESSIONS_ENDPOINT), or set PLUGIN_SANDBOX_ALLOW_NETWORK=true to accept that plugins and the ` +
      `code interpreter can reach the network`,
  );
}

/** Starts `launch` and answers undefined when it exits 0, else why not. */
function tryLaunch(launch: Launch): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(launch.command, launch.args, { stdio: ['ignore', 'ignore', 'pipe'], env: {} });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      if (stderr.length < 2000) stderr += text;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve(e.message);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve(
        code === 0
          ? undefined
          : stderr.trim().split('\n').filter(Boolean).pop()?.slice(0, 300) || `it exited with ${String(code)}`,
      );
    });
  });
}
