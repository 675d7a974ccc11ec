import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * `node --import tsx bench/profile-top.ts <dir or .cpuprofile> [count] [skip ms]`: the top self-time and inclusive entries of
 * a V8 CPU profile (`BENCH_CPU_PROFILE=<dir> npm run bench` writes one), as percentages of the sampled time spent
 * off idle; `[skip ms]` leaves out the profile's first milliseconds (start-up). Inclusive time counts a function once per stack, however deep it recurses.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [target = '.', countArg = '25', skipArg = '0'] = process.argv.slice(2);
const count = Number(countArg);
// Start-up (module loading, transpiling) is not the read path: samples in the first `skip` ms are left out.
const skipMs = Number(skipArg);
const file = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => join(target, f))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
  : target;
if (!file) throw new Error(`no .cpuprofile in ${target}`);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const cwd = process.cwd();
const nameOf = (n: ProfileNode) => {
  const { functionName, url, lineNumber } = n.callFrame;
  const where = url.startsWith('file://') ? relative(cwd, url.slice(7)) : url;
  return `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`.trim();
};
const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);

const selfMs = new Map<string, number>();
/** Self time by where the code lives: a package under node_modules, a file of the project, node's own or native. */
const byHome = new Map<string, number>();
const homeOf = (n: ProfileNode) => {
  const url = n.callFrame.url;
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1];
  if (pkg) return pkg;
  if (url.startsWith('node:')) return 'node';
  if (url.startsWith('file://')) return relative(cwd, url.slice(7));
  return `(native) ${n.callFrame.functionName}`;
};
const totalMs = new Map<string, number>();
let busy = 0;
let gc = 0;
let at = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const ms = (profile.timeDeltas[i] ?? 0) / 1000;
  at += ms;
  if (at < skipMs) continue;
  const node = byId.get(profile.samples[i]);
  if (!node) continue;
  const fn = node.callFrame.functionName;
  if (fn === '(idle)' || fn === '(program)') continue;
  if (fn === '(garbage collector)') gc += ms;
  busy += ms;
  const self = nameOf(node);
  selfMs.set(self, (selfMs.get(self) ?? 0) + ms);
  const home = homeOf(node);
  byHome.set(home, (byHome.get(home) ?? 0) + ms);
  const seen = new Set<string>();
  for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
    const n = byId.get(id);
    if (!n || IDLE.has(n.callFrame.functionName) || n.callFrame.functionName === '(root)') continue;
    const name = nameOf(n);
    if (seen.has(name)) continue;
    seen.add(name);
    totalMs.set(name, (totalMs.get(name) ?? 0) + ms);
  }
}

const top = (m: Map<string, number>) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => `${((100 * ms) / busy).toFixed(1).padStart(5)}%  ${name}`);
console.log(`${relative(cwd, file)}: ${Math.round(busy)} ms busy (${((100 * gc) / busy).toFixed(1)}% garbage collection)`);
console.log('\nself time:');
for (const line of top(selfMs)) console.log(line);
console.log('\nself time by package or file:');
for (const line of top(byHome)) console.log(line);
console.log('\ninclusive time:');
for (const line of top(totalMs)) console.log(line);
