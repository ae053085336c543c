// What LangGraph.js reads in a store of the sample threads (after statectl pruned a copy of it, say):
// every checkpoint of every thread, as generate.mjs records them, as JSON lines on stdout.
//
//   node read.mjs FILE.sqlite | postgresql://...
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { compiled, records } from "./apps.mjs";

const [where] = process.argv.slice(2);
let saver;
if (where.startsWith("postgres")) {
  const { PostgresSaver } = await import("@langchain/langgraph-checkpoint-postgres");
  saver = PostgresSaver.fromConnString(where);
} else {
  saver = SqliteSaver.fromConnString(where);
}
const threads = new Set();
for await (const t of saver.list({ configurable: {} })) threads.add(t.config.configurable.thread_id);
const lines = await records(saver, [...threads].sort().map((t) => [compiled(t, saver), t]));
process.stdout.write(lines.map((l) => l + "\n").join(""));
if (saver.end) await saver.end();
