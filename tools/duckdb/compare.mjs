// Checks `jsonl-perf summary --json DIR` against DuckDB's figures for the same files:
// every group's records, and every metric's count, p50, p90, p99 and max, equal.
//
//   node compare.mjs JSONL_PERF DIR    exit 0 when they agree, 1 with the differences
import { execFileSync } from "node:child_process";
import { percentiles } from "./percentiles.mjs";

const [tool, directory] = process.argv.slice(2);
const ours = JSON.parse(execFileSync(tool, ["summary", "--json", directory], { maxBuffer: 1 << 26 }));
const theirs = await percentiles(directory);

const problems = [];
const key = (group) => `${group.kind} / ${group.status}`;
const duckGroups = new Map(theirs.groups.map((group) => [key(group), group]));
if (ours.groups.length !== theirs.groups.length) {
  problems.push(`${ours.groups.length} groups in summary, ${theirs.groups.length} in DuckDB`);
}
let compared = 0;
for (const group of ours.groups) {
  const duck = duckGroups.get(key(group));
  if (!duck) {
    problems.push(`${key(group)}: not in DuckDB's result`);
    continue;
  }
  if (group.records !== duck.records) problems.push(`${key(group)}: ${group.records} records, DuckDB ${duck.records}`);
  const names = new Set([...Object.keys(group.metrics), ...Object.keys(duck.metrics)]);
  for (const name of names) {
    const a = group.metrics[name];
    const b = duck.metrics[name];
    for (const figure of ["count", "p50", "p90", "p99", "max"]) {
      if (a?.[figure] !== b?.[figure]) problems.push(`${key(group)} ${name} ${figure}: summary ${a?.[figure]}, DuckDB ${b?.[figure]}`);
      ++compared;
    }
  }
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`summary and DuckDB agree: ${ours.groups.length} groups, ${compared} figures`);
