// Judges one client run of the official MCP conformance suite against the
// expected-failures baseline, for EVERY scenario the requirement set runs,
// scored and not scored alike. (The suite's own --expected-failures check
// leaves out the not-scored scenarios: json-schema-2020-12-preservation and
// the auth extensions.)
//
// usage: node check-results.mjs REVISION RESULTS_DIR BASELINE_YML
//
// A scenario fails when one of its checks is FAILURE or WARNING (the suite's
// own rule), when it left no checks.json, or when none of its checks
// succeeded. A baselined scenario must fail; any other must pass. Entries of
// the form "scenario:check-id" excuse that one check, as in the suite.
// Prints one line per scenario and a closing "N passed, N failed" line
// (passed = non-baselined passes, failed = unexpected outcomes; baselined
// failures are counted on the line before); exits 1 on any unexpected one.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
const [revision, resultsDir, baselinePath] = process.argv.slice(2);
if (!revision || !resultsDir || !baselinePath) {
  console.error('usage: node check-results.mjs REVISION RESULTS_DIR BASELINE_YML');
  process.exit(2);
}

const requirementsFile = join(
  here, 'node_modules', '@modelcontextprotocol', 'conformance', 'requirements', `${revision}.yaml`);
const requirements = parse(readFileSync(requirementsFile, 'utf8'));
const expected = [
  ...(requirements.client ?? []),
  ...(requirements.not_scored ?? []).filter((e) => e.leg === 'client').map((e) => e.scenario),
];

const baselineDoc = parse(readFileSync(baselinePath, 'utf8')) ?? {};
const wholeScenario = new Set();
const perCheck = new Map();
for (const entry of baselineDoc.client ?? []) {
  const text = String(entry);
  const colon = text.indexOf(':');
  if (colon === -1) {
    wholeScenario.add(text);
  } else {
    const scenario = text.slice(0, colon);
    if (!perCheck.has(scenario)) perCheck.set(scenario, new Set());
    perCheck.get(scenario).add(text.slice(colon + 1));
  }
}

// <results>/<scenario>-<timestamp>/checks.json; scenario names may hold '/'.
const stamp = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const found = new Map();
function walk(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (!statSync(path).isDirectory()) continue;
    const checks = join(path, 'checks.json');
    if (existsSync(checks) && stamp.test(name)) {
      const scenario = relative(resultsDir, path).replace(stamp, '');
      found.set(scenario, { checks: JSON.parse(readFileSync(checks, 'utf8')), dir: path });
    } else {
      walk(path);
    }
  }
}
walk(resultsDir);

const bad = (c) => c.status === 'FAILURE' || c.status === 'WARNING';
let passed = 0;
let failed = 0;
let baselined = 0;
const lines = [];
for (const scenario of expected) {
  const result = found.get(scenario);
  const problems = [];
  let fails;
  if (!result) {
    fails = true;
    problems.push('no checks.json (the scenario did not run to the end)');
  } else {
    const failing = result.checks.filter(bad);
    for (const c of failing) problems.push(`${c.id} ${c.status}: ${c.errorMessage ?? c.description}`);
    if (!result.checks.some((c) => c.status === 'SUCCESS')) problems.push('no check succeeded');
    fails = problems.length > 0;
    const excused = perCheck.get(scenario);
    if (excused && result) {
      const unexcused = failing.filter((c) => !excused.has(c.id));
      const stale = [...excused].filter((id) => {
        const same = result.checks.filter((c) => c.id === id && c.status !== 'INFO');
        return same.length > 0 && same.every((c) => c.status === 'SUCCESS');
      });
      if (unexcused.length === 0 && stale.length === 0 && result.checks.some((c) => c.status === 'SUCCESS')) {
        baselined++;
        lines.push(`  ~ ${scenario} (baselined checks fail as expected: ${[...excused].join(', ')})`);
      } else {
        failed++;
        const why = [
          ...unexcused.map((c) => `${c.id} ${c.status}: ${c.errorMessage ?? c.description}`),
          ...stale.map((id) => `baselined check ${id} now passes: remove it from the baseline`),
        ];
        lines.push(`  ✗ ${scenario}: ${why.join(' | ') || 'no check succeeded'}`);
      }
      continue;
    }
  }
  if (wholeScenario.has(scenario)) {
    if (fails) {
      baselined++;
      lines.push(`  ~ ${scenario} (expected failure, baselined)`);
    } else {
      failed++;
      lines.push(`  ✗ ${scenario}: passes but is in the baseline: remove it from ${baselinePath}`);
    }
  } else if (fails) {
    failed++;
    lines.push(`  ✗ ${scenario}: ${problems.join(' | ')}${result ? ` (see ${result.dir})` : ''}`);
  } else {
    passed++;
    lines.push(`  ✓ ${scenario}`);
  }
}
console.log(`\nmcpmux verdict for requirements ${revision} (every scenario, scored or not):`);
for (const line of lines) console.log(line);
console.log(`${baselined} scenario(s) failed as the baseline expects`);
console.log(`${revision}: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
