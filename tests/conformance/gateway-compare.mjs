// Compares the server suite's verdicts for the conformance fixture server
// reached directly and through `mcpmux gateway --no-prefix` (gateway.sh
// runs both), prints them side by side, and exits 1 when the gateway loses
// a scenario or the fixture is not the fixture it should be.
//
// usage: node gateway-compare.mjs OUT REVISION...
//   OUT/<revision>/{direct,gateway}/<scenario>-<time>/checks.json
//
// A scenario's verdict, per side:
//   pass  every check is SUCCESS or INFO (or SKIPPED), at least one SUCCESS
//   n/a   no FAILURE or WARNING, but no SUCCESS either: the suite found
//         nothing to check (server-sse-polling when the answer is JSON rather
//         than an SSE stream the server could close: the gateway answers
//         JSON, which the transport allows)
//   FAIL  a FAILURE or WARNING check (check-results.mjs's rule), or no
//         checks.json at all
// The run fails when
//   * at 2025-11-25, a scored scenario (the requirements file's `server`
//     list) does not pass directly: the fixture is broken or the suite grew
//     a scenario it lacks, and a comparison against it would prove nothing;
//   * a scenario the fixture passes is FAIL through the gateway. At
//     2026-07-28 "the fixture passes" means at 2025-11-25: the Python SDK
//     (mcp 1.30.0) predates the stateless revision and refuses every one of
//     its requests (400 "Missing session ID"), so its own 2026-07-28 column
//     is shown for information only (the few scenarios it "passes" there
//     only check that some request is refused), while the gateway speaks
//     the revision itself and is held to what the fixture can do.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
const [out, ...revisions] = process.argv.slice(2);
if (!out || revisions.length === 0) {
  console.error('usage: node gateway-compare.mjs OUT REVISION...');
  process.exit(2);
}
const STATEFUL_BASELINE = '2025-11-25';

function requirements(revision) {
  const file = join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'requirements', `${revision}.yaml`);
  const doc = parse(readFileSync(file, 'utf8'));
  const scored = doc.server ?? [];
  const other = (doc.not_scored ?? []).filter((e) => e.leg === 'server').map((e) => e.scenario);
  return { scored, all: [...scored, ...other] };
}

const stamp = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
// scenario -> verdict for one side; the suite names folders server-<scenario>-<time>.
function verdicts(dir) {
  const found = new Map();
  if (!existsSync(dir)) return found;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const checksFile = join(path, 'checks.json');
    if (!statSync(path).isDirectory() || !stamp.test(name) || !existsSync(checksFile)) continue;
    const scenario = name.replace(stamp, '').replace(/^server-/, '');
    const checks = JSON.parse(readFileSync(checksFile, 'utf8'));
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    let verdict = 'pass';
    if (bad.length > 0) verdict = 'FAIL';
    else if (!checks.some((c) => c.status === 'SUCCESS')) verdict = 'n/a';
    found.set(scenario, {
      verdict,
      why: bad.map((c) => `${c.id}: ${(c.errorMessage ?? c.status).slice(0, 200)}`),
    });
  }
  return found;
}

const results = new Map();
for (const revision of [...new Set([STATEFUL_BASELINE, ...revisions])]) {
  results.set(revision, {
    req: requirements(revision),
    direct: verdicts(join(out, revision, 'direct')),
    gateway: verdicts(join(out, revision, 'gateway')),
  });
}
const verdictOf = (side, revision, scenario) =>
  results.get(revision)?.[side].get(scenario)?.verdict ?? (results.get(revision)?.req.all.includes(scenario) ? 'FAIL' : '-');

const problems = [];
const baseline = results.get(STATEFUL_BASELINE);
for (const scenario of baseline.req.scored) {
  if (verdictOf('direct', STATEFUL_BASELINE, scenario) !== 'pass') {
    problems.push(`fixture: ${scenario} does not pass directly at ${STATEFUL_BASELINE} (every scored scenario must)`);
  }
}

const scenarios = [];
for (const revision of revisions) {
  for (const s of results.get(revision).req.all) if (!scenarios.includes(s)) scenarios.push(s);
}
const width = Math.max(...scenarios.map((s) => s.length), 'scenario'.length);
const header = ['scenario'.padEnd(width), ...revisions.flatMap((r) => [`${r} direct`, `${r} gateway`])];
console.log(`| ${header.join(' | ')} |`);
console.log(`|${header.map((h) => '-'.repeat(h.length + 2)).join('|')}|`);
const counts = Object.fromEntries(revisions.map((r) => [r, { direct: 0, gateway: 0, held: 0, of: 0 }]));
for (const scenario of scenarios) {
  const cells = [scenario.padEnd(width)];
  for (const revision of revisions) {
    const r = results.get(revision);
    const direct = verdictOf('direct', revision, scenario);
    const gateway = verdictOf('gateway', revision, scenario);
    const held = r.req.all.includes(scenario)
      && verdictOf('direct', revision === '2026-07-28' ? STATEFUL_BASELINE : revision, scenario) === 'pass';
    if (r.req.all.includes(scenario)) counts[revision].of += 1;
    if (direct === 'pass') counts[revision].direct += 1;
    if (gateway === 'pass') counts[revision].gateway += 1;
    if (held) {
      counts[revision].held += 1;
      if (gateway === 'FAIL') {
        const why = r.gateway.get(scenario)?.why.join('; ') || 'no results';
        problems.push(`gateway: ${scenario} at ${revision} passes against the fixture, fails through the gateway: ${why}`);
      }
    }
    // `*` marks the scenarios the gateway is held to.
    cells.push(direct.padEnd(`${revision} direct`.length), `${gateway}${held ? ' *' : ''}`.padEnd(`${revision} gateway`.length));
  }
  console.log(`| ${cells.join(' | ')} |`);
}
console.log('\n* the gateway must pass it (the fixture passes it; at 2026-07-28: at 2025-11-25)');
for (const revision of revisions) {
  const c = counts[revision];
  console.log(`${revision}: ${c.of} scenarios; pass directly ${c.direct}, through the gateway ${c.gateway}; held to ${c.held}`);
}
if (problems.length > 0) {
  console.log('');
  for (const p of problems) console.log(`FAIL ${p}`);
  console.log(`\nconformance gateway: FAILED (${problems.length}); per-scenario checks under ${out}/<revision>/{direct,gateway}/`);
  process.exit(1);
}
console.log('\nconformance gateway: every scenario the fixture passes also passes through the gateway');
