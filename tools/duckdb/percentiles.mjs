// The per-group figures of `jsonl-perf summary`, computed by DuckDB with one SQL query
// over a directory of perf_metrics-*.jsonl (or .jsonl.zst) files: records per server kind
// and status, and per metric the count and nearest-rank p50/p90/p99 and max, in milliseconds.
//
//   node percentiles.mjs DIR     prints {"groups": [...]} as summary --json has them
import { DuckDBInstance } from "@duckdb/node-api";
import { pathToFileURL } from "node:url";

// The fields the figures take, typed: DuckDB reads only these of each line.
const timing = "STRUCT(arrival_time DOUBLE, first_scheduled_time DOUBLE, first_token_time DOUBLE, last_token_time DOUBLE)";
const columns = {
  status: "VARCHAR",
  ctx_server: "VARCHAR",
  perf_metrics: `STRUCT(timing_metrics ${timing})`,
  ctx_perf_metrics: `STRUCT(perf_metrics STRUCT(timing_metrics ${timing}))`,
  gen_perf_metrics: `STRUCT(perf_metrics STRUCT(timing_metrics ${timing}))`,
  disagg_server_arrival_time: "DOUBLE",
  disagg_ctx_dispatch_time: "DOUBLE",
  disagg_server_first_token_time: "DOUBLE",
};

// Each metric as summary defines it: (end - start) * 1000, from the worker record's
// timing or the disaggregated record's.
const worker = "perf_metrics.timing_metrics";
const ctx = "ctx_perf_metrics.perf_metrics.timing_metrics";
const gen = "gen_perf_metrics.perf_metrics.timing_metrics";
const metrics = {
  queue_ms: [`${worker}.first_scheduled_time - ${worker}.arrival_time`, `${ctx}.first_scheduled_time - ${ctx}.arrival_time`],
  ttft_ms: [`${worker}.first_token_time - ${worker}.arrival_time`, `${ctx}.first_token_time - ${ctx}.arrival_time`],
  e2e_ms: [`${worker}.last_token_time - ${worker}.arrival_time`, `${gen}.last_token_time - ${gen}.arrival_time`],
  frontend_ttft_ms: ["NULL", "disagg_server_first_token_time - disagg_server_arrival_time"],
  ctx_dispatch_ms: ["NULL", "disagg_ctx_dispatch_time - disagg_server_arrival_time"],
};

// Nearest rank as summary takes it: the ceil(p * n)-th smallest, p and the product in
// double precision.
function rank(p) {
  return `list_sort(list(value))[greatest(1, ceil(${p}::DOUBLE * count(value)))::BIGINT]`;
}

export function query(directory) {
  const files = `${directory.replace(/'/g, "''")}/perf_metrics-*.jsonl*`;
  const types = Object.entries(columns).map(([name, type]) => `${name}: '${type}'`).join(", ");
  const values = Object.entries(metrics)
    .map(([name, [workerValue, disaggValue]]) =>
      `(CASE WHEN ctx_server IS NOT NULL THEN ${disaggValue} ELSE ${workerValue} END) * 1000 AS ${name}`)
    .join(",\n             ");
  return `
    WITH records AS MATERIALIZED (
      SELECT regexp_extract(filename, 'perf_metrics-([^-/]+)-[^/]*$', 1) AS kind,
             coalesce(status, '(none)') AS status,
             ${values}
      FROM read_json('${files}', format = 'newline_delimited', filename = true, ignore_errors = true,
                     columns = {${types}})
    ),
    samples AS (
      UNPIVOT records ON ${Object.keys(metrics).join(", ")} INTO NAME metric VALUE value
    ),
    figures AS (
      SELECT kind, status, metric, count(value) AS count, ${rank(0.5)} AS p50, ${rank(0.9)} AS p90,
             ${rank(0.99)} AS p99, max(value) AS max
      FROM samples GROUP BY kind, status, metric
    )
    SELECT r.kind, r.status, r.records, f.metric, f.count, f.p50, f.p90, f.p99, f.max
    FROM (SELECT kind, status, count(*) AS records FROM records GROUP BY kind, status) r
    LEFT JOIN figures f USING (kind, status)
    ORDER BY r.kind, r.status, f.metric`;
}

export async function percentiles(directory) {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const reader = await connection.runAndReadAll(query(directory));
  const groups = new Map();
  for (const row of reader.getRowObjectsJS()) {
    const key = `${row.kind}\u0000${row.status}`;
    if (!groups.has(key)) groups.set(key, { kind: row.kind, status: row.status, records: Number(row.records), metrics: {} });
    if (row.metric !== null) {
      groups.get(key).metrics[row.metric] = { count: Number(row.count), p50: row.p50, p90: row.p90, p99: row.p99, max: row.max };
    }
  }
  connection.closeSync();
  return { groups: [...groups.values()] };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await percentiles(process.argv[2])));
}
