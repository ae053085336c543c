// LangGraph.js threads for statectl's parity tests, written by LangGraph.js's own savers, and what
// LangGraph.js itself reports for every checkpoint (getStateHistory), in statectl's tagged JSON form.
//
//   node generate.mjs OUT.sqlite EXPECTED.jsonl [postgresql://... EXPECTED_PG.jsonl]   (generate.sh)
//
// Scripted nodes stand in for chat models (no network). Every kind of step a JS app makes is here
// (apps.mjs): chat with tools (ToolNode), reducers with defaults, static fan-out, Sends, interrupts
// (one, two in parallel, resumed and waiting), interruptBefore breakpoints, a node that throws, a
// subgraph (done, waiting, resumed), forks (updateState on an older checkpoint; one sets list keys to
// []), DeltaChannels (messages; plain lists, a string at a time), and JS built-in values (Set, Map,
// Uint8Array, RegExp -- also in Sends, interrupts, resumes and task results --, Date, Error, undefined).
import fs from "node:fs";
import { Command } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { cfg, compiled, counters, records } from "./apps.mjs";

async function recordAll(saver, threads, out) {
  const lines = await records(saver, threads);
  fs.writeFileSync(out, lines.join("\n") + "\n");
  return lines.length;
}

// -- the runs -----------------------------------------------------------------------------------------
async function run(saver) {
  const threads = [];
  const g = compiled("js-chat", saver);
  counters.calls = 0;
  await g.invoke({ messages: [new HumanMessage({ content: "How big is the bakery market in Porto?", id: "h-1" })] }, cfg("js-chat"));
  await g.invoke({ messages: [new HumanMessage({ content: "And in Lisbon?", id: "h-2" })] }, cfg("js-chat"));
  threads.push([g, "js-chat"]);

  // a fork: the state at an older checkpoint edited (updateState), then run on from there
  await g.invoke({ messages: [new HumanMessage({ content: "Bakeries in Braga?", id: "h-3" })] }, cfg("js-fork"));
  const history = [];
  for await (const s of g.getStateHistory(cfg("js-fork"))) history.push(s);
  const early = history.find((s) => s.next.includes("tools"));
  const forked = await g.updateState(early.config, {
    messages: [new AIMessage({ content: "No tool needed: Braga has 9.", id: early.values.messages[1].id })],
  }, "agent");
  await g.invoke(null, forked);
  threads.push([g, "js-fork"]);

  const v = compiled("js-values", saver);
  await v.invoke({}, cfg("js-values"));
  threads.push([v, "js-values"]);

  const s = compiled("js-sends", saver);
  await s.invoke({}, cfg("js-sends"));
  threads.push([s, "js-sends"]);

  const a = compiled("js-interrupt-waiting", saver);
  await a.invoke({}, cfg("js-interrupt-waiting"));
  threads.push([a, "js-interrupt-waiting"]);
  await a.invoke({}, cfg("js-interrupt-resumed"));
  await a.invoke(new Command({ resume: "yes" }), cfg("js-interrupt-resumed"));
  threads.push([a, "js-interrupt-resumed"]);

  const p = compiled("js-parallel-waiting", saver);
  await p.invoke({}, cfg("js-parallel-waiting"));
  threads.push([p, "js-parallel-waiting"]);
  await p.invoke({}, cfg("js-parallel-resumed"));
  const waiting = await p.getState(cfg("js-parallel-resumed"));
  const resume = Object.fromEntries(waiting.tasks.flatMap((t) => t.interrupts).map((i) => [i.id, `ok ${i.value}`]));
  await p.invoke(new Command({ resume }), cfg("js-parallel-resumed"));
  threads.push([p, "js-parallel-resumed"]);

  const r = compiled("js-breakpoint", saver);
  await r.invoke({}, cfg("js-breakpoint"));
  threads.push([r, "js-breakpoint"]);
  await r.invoke({}, cfg("js-breakpoint-resumed"));
  await r.invoke(null, cfg("js-breakpoint-resumed"));
  threads.push([r, "js-breakpoint-resumed"]);

  const f = compiled("js-error", saver);
  try {
    await f.invoke({}, cfg("js-error"));
  } catch {
    // the error is in the checkpoint's writes
  }
  threads.push([f, "js-error"]);

  const n = compiled("js-subgraph", saver);
  await n.invoke({ question: "Porto" }, cfg("js-subgraph"));
  threads.push([n, "js-subgraph"]);
  await n.invoke({ question: "Porto, wait" }, cfg("js-subgraph-waiting"));
  threads.push([n, "js-subgraph-waiting"]);

  const d = compiled("js-delta", saver);
  counters.replies = 0;
  for (let i = 1; i <= 5; i += 1) {
    await d.invoke({ messages: [new HumanMessage({ content: `turn ${i}`, id: `d-h-${i}` })] }, cfg("js-delta"));
  }
  threads.push([d, "js-delta"]);

  const dl = compiled("js-delta-list", saver);
  counters.replies = 0;
  for (let i = 1; i <= 7; i += 1) await dl.invoke({}, cfg("js-delta-list"));
  threads.push([dl, "js-delta-list"]);

  const re = compiled("js-regexp", saver);
  await re.invoke({}, cfg("js-regexp-waiting"));
  threads.push([re, "js-regexp-waiting"]);
  await re.invoke({}, cfg("js-regexp"));
  await re.updateState(cfg("js-regexp"), { nested: { edited: /ed(it)?/i } });
  await re.invoke(new Command({ resume: /yes|si/i, update: { rules: [/upd/m] } }), cfg("js-regexp"));
  threads.push([re, "js-regexp"]);

  // forks that set a list key to []: a plain channel, and a reducer's (its default, before any write)
  const l = compiled("js-fork-empty", saver);
  await l.invoke({}, cfg("js-fork-empty"));
  const steps = [];
  for await (const st of l.getStateHistory(cfg("js-fork-empty"))) steps.push(st);
  const atUse = steps.find((st) => st.next.includes("use"));
  await l.invoke(null, await l.updateState(atUse.config, { items: [] }, "gather"));
  await l.updateState(cfg("js-fork-empty"), { items: [] }); // (and at the head: a version no branch has)
  threads.push([l, "js-fork-empty"]);
  await l.invoke({}, cfg("js-fork-empty-notes"));
  const steps2 = [];
  for await (const st of l.getStateHistory(cfg("js-fork-empty-notes"))) steps2.push(st);
  const atGather = steps2.find((st) => st.next.includes("gather"));
  await l.invoke(null, await l.updateState(atGather.config, { items: [], notes: [] }));
  threads.push([l, "js-fork-empty-notes"]);

  // an interrupt inside a subgraph, resumed
  await n.invoke({ question: "Lisbon, wait" }, cfg("js-subgraph-resumed"));
  await n.invoke(new Command({ resume: "inner yes" }), cfg("js-subgraph-resumed"));
  threads.push([n, "js-subgraph-resumed"]);
  return threads;
}

const [dbPath, expectedPath, pgUrl, expectedPgPath] = process.argv.slice(2);
fs.rmSync(dbPath, { force: true });
const sqlite = SqliteSaver.fromConnString(dbPath);
console.log(`${dbPath}: ${await recordAll(sqlite, await run(sqlite), expectedPath)} checkpoints recorded`);
sqlite.db.pragma("wal_checkpoint(TRUNCATE)");
sqlite.db.pragma("journal_mode=DELETE");
sqlite.db.close();
if (pgUrl) {
  const { PostgresSaver } = await import("@langchain/langgraph-checkpoint-postgres");
  const pg = PostgresSaver.fromConnString(pgUrl);
  await pg.setup();
  console.log(`${pgUrl}: ${await recordAll(pg, await run(pg), expectedPgPath)} checkpoints recorded`);
  await pg.end();
}
