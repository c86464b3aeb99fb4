// The per-group figures of `jsonl-perf summary`, computed by DuckDB with one SQL query
// over a directory of perf_metrics-*.jsonl files: records per server kind and status, and
// per metric the count and nearest-rank p50/p90/p99 and max, in milliseconds.
//
//   node percentiles.mjs DIR     prints {"groups": [...]} as summary --json has them
import { DuckDBInstance } from "@duckdb/node-api";
import { pathToFileURL } from "node:url";

// A metric: (end - start) * 1000 of the worker record's fields, or the disaggregated
// record's (null where the record has no such metric), as summary defines it.
const metrics = {
  queue_ms: ["perf_metrics.timing_metrics", "ctx_perf_metrics.perf_metrics.timing_metrics", "first_scheduled_time", "arrival_time"],
  ttft_ms: ["perf_metrics.timing_metrics", "ctx_perf_metrics.perf_metrics.timing_metrics", "first_token_time", "arrival_time"],
  e2e_ms: ["perf_metrics.timing_metrics", "gen_perf_metrics.perf_metrics.timing_metrics", "last_token_time", "arrival_time"],
  frontend_ttft_ms: [null, "", "disagg_server_first_token_time", "disagg_server_arrival_time"],
  ctx_dispatch_ms: [null, "", "disagg_ctx_dispatch_time", "disagg_server_arrival_time"],
};

function field(prefix, name) {
  return `(json->>'$.${prefix ? prefix + "." : ""}${name}')::DOUBLE`;
}

function metricSql(name, [worker, disagg, end, start]) {
  const disaggValue = `(${field(disagg, end)} - ${field(disagg, start)}) * 1000`;
  const workerValue = worker === null ? "NULL" : `(${field(worker, end)} - ${field(worker, start)}) * 1000`;
  return `SELECT kind, status, '${name}' AS metric, CASE WHEN disagg THEN ${disaggValue} ELSE ${workerValue} END AS value FROM records`;
}

// Nearest rank as summary takes it: the ceil(p * n)-th smallest, p and the product in
// double precision.
function rank(p) {
  return `list_sort(list(value))[greatest(1, ceil(${p}::DOUBLE * count(value)))::BIGINT]`;
}

export function query(directory) {
  const files = `${directory.replace(/'/g, "''")}/perf_metrics-*.jsonl`;
  return `
    WITH records AS (
      SELECT regexp_extract(filename, 'perf_metrics-([^-/]+)-[^/]*$', 1) AS kind,
             coalesce(json->>'$.status', '(none)') AS status,
             json_exists(json, '$.ctx_server') AS disagg,
             json
      FROM read_json_objects('${files}', format = 'newline_delimited', filename = true)
    ),
    samples AS (${Object.entries(metrics).map(([name, spec]) => metricSql(name, spec)).join(" UNION ALL ")}),
    figures AS (
      SELECT kind, status, metric, count(value) AS count, ${rank(0.5)} AS p50, ${rank(0.9)} AS p90,
             ${rank(0.99)} AS p99, max(value) AS max
      FROM samples WHERE value IS NOT NULL GROUP BY kind, status, metric
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
