// The official Anthropic SDK against `jsonl-perf serve`: a message whole, a message
// streamed (its events accumulated by the SDK into the final message), a refusal read as
// the SDK's typed error, and count_tokens; then the server's traces of them.
//
//   node anthropic_messages.mjs JSONL_PERF SCRATCH_DIR
// The SDK is installed beside this script (tools/setup: npm ci here). Exit 0 when every
// check holds.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { once } from "node:events";
import Anthropic from "@anthropic-ai/sdk";

const [jsonlPerf, scratch] = process.argv.slice(2);
const failures = [];
function check(what, holds) {
  if (!holds) failures.push(what);
}

rmSync(scratch, { recursive: true, force: true });
const server = spawn(jsonlPerf, ["serve", "--port", "0", "--output-dir", scratch, "--queue-ms", "const:0",
                                 "--ttft-ms", "const:1", "--itl-ms", "const:1"], { stdio: ["ignore", "pipe", "inherit"] });
const url = await new Promise((resolve, reject) => {
  let out = "";
  const timer = setTimeout(() => reject(new Error("the server did not say where it listens")), 30000);
  server.stdout.on("data", (bytes) => {
    out += bytes;
    const match = out.match(/listening on (http:\/\/\S+)/);
    if (match) {
      clearTimeout(timer);
      resolve(match[1]);
    }
  });
});

const client = new Anthropic({ apiKey: "sk-ant-test-key", baseURL: url, maxRetries: 0 });
const request = { model: "simulated-llm", max_tokens: 3, system: "Be brief.",
                  messages: [{ role: "user", content: "Say hello." }] };

const whole = await client.messages.create(request);
check("a whole message is a message", whole.type === "message" && whole.role === "assistant");
check("its text block", whole.content.length === 1 && whole.content[0].type === "text" && whole.content[0].text.length > 0);
check("its stop reason", whole.stop_reason === "max_tokens");
check("its usage", whole.usage.output_tokens === 3 && whole.usage.input_tokens >= 1);

const stream = client.messages.stream({ ...request, max_tokens: 2 });
const seen = [];
for await (const event of stream) seen.push(event.type);
const final = await stream.finalMessage();
check(`the stream's events in order (${seen.join(",")})`,
      seen.join(",") === "message_start,content_block_start,content_block_delta,content_block_delta,content_block_stop," +
                         "message_delta,message_stop");
check("the streamed message's text", final.content[0].type === "text" && final.content[0].text.length > 0);
check("the streamed message's usage", final.usage.output_tokens === 2 && final.usage.input_tokens >= 1);
check("the streamed message's stop reason", final.stop_reason === "max_tokens");

try {
  await client.messages.create({ model: "simulated-llm", messages: [{ role: "user", content: "hi" }] });
  check("a body without max_tokens is refused", false);
} catch (error) {
  check("a refusal is the SDK's BadRequestError", error instanceof Anthropic.BadRequestError && error.status === 400);
  check("naming the missing field", String(error.message).includes("max_tokens"));
}

const counted = await client.messages.countTokens({ model: "simulated-llm", messages: [{ role: "user", content: "a".repeat(400) }] });
check(`count_tokens (${JSON.stringify(counted)})`, counted.input_tokens === 100);

server.kill("SIGTERM");
const [code] = await once(server, "exit");
check("the server stopped cleanly", code === 0);

const lines = (kind) => {
  const found = [];
  const root = join(scratch, "request_trace");
  for (const hour of readdirSync(root)) {
    if (hour.startsWith("_")) continue;
    for (const name of readdirSync(join(root, hour))) {
      if (!name.startsWith(kind + "-")) continue;
      for (const line of readFileSync(join(root, hour, name), "utf8").split("\n")) if (line) found.push(JSON.parse(line));
    }
  }
  return found;
};
const requests = lines("requests");
const responses = lines("responses");
check("three messages traced, one refused (count_tokens is not)", requests.length === 3 &&
      requests.filter((line) => line.status === "rejected_400").length === 1 && responses.length === 2);
check("each on the route /v1/messages", requests.every((line) => line.route === "/v1/messages"));
check("the SDK's key is never recorded", !JSON.stringify(requests).includes("sk-ant-test-key"));
check("the stream traced as the SDK read it", responses.some((line) => line.response.kind === "sse_text" &&
      line.response.body.includes("event: message_stop")));

for (const failure of failures) console.log(`FAILED: ${failure}`);
console.log(failures.length === 0 ? "the Anthropic SDK read every answer" : `${failures.length} checks failed`);
process.exit(failures.length === 0 ? 0 : 1);
