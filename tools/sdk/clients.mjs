// The official client SDKs against `jsonl-perf serve`, called as their documentation
// calls them: Anthropic's (a message whole and streamed, with its final message; a
// stream abandoned; a malformed body as its BadRequestError; count_tokens) and OpenAI's
// (every OpenAI route, whole and streamed), first against a server, then against a
// disaggregated proxy and its two workers. Each run directory is then joined by
// `jsonl-perf join`: every request traced once, every completed one joined to its perf
// records with its usage.
//
//   node clients.mjs JSONL_PERF SCRATCH_DIR
// The SDKs are installed beside this script (tools/setup: npm ci here). Exit 0 when every
// check holds.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { once } from "node:events";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const [jsonlPerf, scratch] = process.argv.slice(2);
const failures = [];
function check(what, holds) {
  if (!holds) failures.push(what);
}

// Every server started, stopped at exit whatever happened.
const servers = [];
process.on("exit", () => servers.forEach((server) => server.exitCode === null && server.kill("SIGKILL")));

// A `jsonl-perf serve` process recording into `dir`; resolves once it says where it listens.
async function serve(dir, role, extra = []) {
  const server = spawn(jsonlPerf, ["serve", "--role", role, "--port", "0", "--output-dir", dir, "--queue-ms", "const:0",
                                   "--ttft-ms", "const:1", "--itl-ms", "const:1", ...extra],
                       { stdio: ["ignore", "pipe", "inherit"] });
  servers.push(server);
  server.url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`the ${role} did not say where it listens`)), 30000);
    server.stdout.on("data", (bytes) => {
      out += bytes;
      const match = out.match(/listening on (http:\/\/\S+)/);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
  return server;
}

async function stop(server, name) {
  server.kill("SIGTERM");
  const [code] = await once(server, "exit");
  check(`the ${name} stopped cleanly (exit ${code})`, code === 0);
}

// `jsonl-perf join DIR --json`.
function joined(dir) {
  const run = spawnSync(jsonlPerf, ["join", dir, "--json"], { encoding: "utf8" });
  check(`join ${dir} exits 0 (${run.status}: ${run.stdout.slice(-300)})`, run.status === 0);
  return JSON.parse(run.stdout);
}

const request = { model: "simulated-llm", max_tokens: 3, system: "Be brief.", messages: [{ role: "user", content: "Say hello." }] };

// Anthropic's SDK: returns the requests it made that are traced (count_tokens is not).
async function anthropicCalls(url, where, { abandon }) {
  // docs:begin anthropic
  const client = new Anthropic({ apiKey: "sk-ant-test-key", baseURL: url, maxRetries: 0 });
  const whole = await client.messages.create(request);
  check(`${where}: a whole message`, whole.type === "message" && whole.content[0].type === "text" &&
        whole.content[0].text.length > 0 && whole.stop_reason === "max_tokens" && whole.usage.output_tokens >= 1);

  const stream = client.messages.stream({ ...request, max_tokens: 2 });
  const seen = [];
  for await (const event of stream) seen.push(event.type);
  const final = await stream.finalMessage();
  // docs:end anthropic
  check(`${where}: the stream's events in order (${seen.join(",")})`,
        seen[0] === "message_start" && seen.at(-2) === "message_delta" && seen.at(-1) === "message_stop" &&
        seen.includes("content_block_delta"));
  check(`${where}: the streamed message`, final.content[0].type === "text" && final.content[0].text.length > 0 &&
        final.usage.output_tokens === 2 && final.usage.input_tokens >= 1 && final.stop_reason === "max_tokens");

  const counted = await client.messages.countTokens({ model: "simulated-llm", messages: [{ role: "user", content: "a".repeat(400) }] });
  check(`${where}: count_tokens (${JSON.stringify(counted)})`, counted.input_tokens === 100);

  let traced = 2;
  if (abandon) {
    const abandoned = client.messages.stream({ ...request, max_tokens: 400 });
    for await (const event of abandoned) {
      if (event.type === "content_block_delta") {
        abandoned.abort();
        break;
      }
    }
    try {
      await client.messages.create({ model: "simulated-llm", messages: [{ role: "user", content: "hi" }] });
      check(`${where}: a body without max_tokens is refused`, false);
    } catch (error) {
      check(`${where}: a refusal is the SDK's BadRequestError naming the field`,
            error instanceof Anthropic.BadRequestError && error.status === 400 && String(error.message).includes("max_tokens"));
    }
    traced += 2;
  }
  return traced;
}

// OpenAI's SDK on `routes`, each whole and streamed: returns the requests it made.
async function openaiCalls(url, where, routes) {
  const client = new OpenAI({ apiKey: "sk-test-key", baseURL: `${url}/v1`, maxRetries: 0 });
  const model = "simulated-llm";
  if (routes.includes("chat")) {
    const chat = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], max_tokens: 3 });
    check(`${where}: a chat completion`, chat.choices[0].message.content.length > 0 && chat.usage.completion_tokens >= 1);
    const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], max_tokens: 3,
                                                          stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      usage = chunk.usage ?? usage;
    }
    check(`${where}: a streamed chat completion`, text.length > 0 && usage && usage.completion_tokens >= 1);
  }
  if (routes.includes("completions")) {
    const completion = await client.completions.create({ model, prompt: "Once", max_tokens: 3 });
    check(`${where}: a completion`, completion.choices[0].text.length > 0 && completion.usage.completion_tokens >= 1);
    const stream = await client.completions.create({ model, prompt: "Once", max_tokens: 3, stream: true,
                                                     stream_options: { include_usage: true } });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    check(`${where}: a streamed completion`, text.length > 0);
  }
  if (routes.includes("responses")) {
    const response = await client.responses.create({ model, input: "Hi", max_output_tokens: 3 });
    check(`${where}: a response`, response.output_text.length > 0 && response.usage.output_tokens >= 1);
    const stream = await client.responses.create({ model, input: "Hi", max_output_tokens: 3, stream: true });
    let completed = null;
    for await (const event of stream) if (event.type === "response.completed") completed = event.response;
    check(`${where}: a streamed response`, completed && completed.output[0].content[0].text.length > 0 &&
          completed.usage.output_tokens >= 1);
  }
  return routes.length * 2;
}

function checkJoined(where, report, { requests, completed, disconnected, rejected, recordsPerRequest }) {
  const expect = (field, value) => check(`${where}: join's ${field} is ${value} (${report[field]})`, report[field] === value);
  expect("request_lines", requests);
  expect("rejected_400", rejected);
  expect("response_lines", requests - rejected);
  expect("completed", completed);
  expect("completed_joined", completed);
  expect("usage_found", completed);
  expect("client_disconnected", disconnected);
  expect("perf_records", completed * recordsPerRequest);
  expect("perf_records_unjoined", 0);
  expect("accepted_without_response", 0);
}

process.on("unhandledRejection", (error) => {
  console.log(`FAILED: ${error.stack ?? error}`);
  process.exit(1);
});
rmSync(scratch, { recursive: true, force: true });

// A server alone.
const aggregated = join(scratch, "aggregated");
mkdirSync(aggregated, { recursive: true });
const server = await serve(aggregated, "server");
let requests = await anthropicCalls(server.url, "server", { abandon: true });
requests += await openaiCalls(server.url, "server", ["chat", "completions", "responses"]);
await stop(server, "server");
checkJoined("server", joined(aggregated), { requests, completed: requests - 2, disconnected: 1, rejected: 1, recordsPerRequest: 1 });

// A proxy and its workers, recording into one run directory as a deployment does.
const disaggregated = join(scratch, "disaggregated");
mkdirSync(disaggregated, { recursive: true });
const context = await serve(disaggregated, "context");
const generation = await serve(disaggregated, "generation");
const proxy = await serve(disaggregated, "proxy", ["--ctx-url", context.url, "--gen-url", generation.url]);
requests = await anthropicCalls(proxy.url, "proxy", { abandon: false });
requests += await openaiCalls(proxy.url, "proxy", ["chat", "completions"]);
await stop(proxy, "proxy");
await stop(context, "context worker");
await stop(generation, "generation worker");
checkJoined("proxy", joined(disaggregated), { requests, completed: requests, disconnected: 0, rejected: 0, recordsPerRequest: 3 });

for (const failure of failures) console.log(`FAILED: ${failure}`);
console.log(failures.length === 0 ? "both SDKs read every answer, and every request joined" : `${failures.length} checks failed`);
process.exit(failures.length === 0 ? 0 : 1);
