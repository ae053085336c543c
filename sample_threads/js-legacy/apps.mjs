// The LangGraph.js 0.3 apps of the older-layout sample threads (generate.mjs runs them): the apps of
// ../js/apps.mjs that LangGraph.js 0.3 has (no DeltaChannel), and the same record of what LangGraph.js
// reports for a checkpoint, in statectl's tagged JSON form.
import {
  Annotation,
  END,
  MessagesAnnotation,
  START,
  Send,
  StateGraph,
  interrupt,
} from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { AIMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";

// -- the graphs -------------------------------------------------------------------------------------
const lookup = tool(async ({ city }) => `${city}: 14 bakeries, 3 closed this year`, {
  name: "lookup_market",
  description: "Market data for a city",
  schema: z.object({ city: z.string() }),
});

export const counters = { calls: 0, replies: 0 };
function agent(state) {
  // a scripted chat model: a tool call for a question, an answer after the tool's result
  const last = state.messages[state.messages.length - 1];
  counters.calls += 1;
  if (last._getType() === "human") {
    return {
      messages: [
        new AIMessage({
          content: "",
          id: `ai-call-${counters.calls}`,
          tool_calls: [{ name: "lookup_market", args: { city: "Porto" }, id: `call-${counters.calls}`, type: "tool_call" }],
        }),
      ],
    };
  }
  return { messages: [new AIMessage({ content: `Porto has 14 bakeries (${counters.calls}).`, id: `ai-answer-${counters.calls}` })] };
}

export const chat = new StateGraph(MessagesAnnotation)
  .addNode("agent", agent)
  .addNode("tools", new ToolNode([lookup]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", toolsCondition, ["tools", END])
  .addEdge("tools", "agent");

const Values = Annotation.Root({
  count: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  tags: Annotation(),
  index: Annotation(),
  raw: Annotation(),
  pattern: Annotation(),
  when: Annotation(),
  failure: Annotation(),
  maybe: Annotation(),
});

export const values = new StateGraph(Values)
  .addNode("start", () => ({
    count: 1,
    log: ["start"],
    tags: new Set(["a", "b"]),
    index: new Map([["porto", 14], ["lisbon", 31]]),
    raw: new Uint8Array([0, 1, 254, 255]),
    pattern: /bak(e|ing)+/gi,
    when: new Date("2026-11-01T09:30:00Z"),
    failure: new Error("kept as data"),
    maybe: { present: 1, missing: undefined },
  }))
  .addNode("left", () => ({ count: 10, log: ["left"], index: new Map([[1, "one"], ["two", 2]]) }))
  .addNode("right", () => ({ count: 100, log: ["right"], tags: new Set([3, 4]) }))
  .addNode("join", (s) => ({ log: [`join ${s.count}`] }))
  .addEdge(START, "start")
  .addEdge("start", "left") // static fan-out: left and right in one step
  .addEdge("start", "right")
  .addEdge(["left", "right"], "join")
  .addEdge("join", END);

const Work = Annotation.Root({
  items: Annotation(),
  results: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
export const sends = new StateGraph(Work)
  .addNode("plan", () => ({ items: ["flour", "rye", "spelt"] }))
  .addNode("work", (arg) => ({ results: [`milled ${arg.item}`] }))
  .addNode("report", (s) => ({ results: [`${s.results.length} done`] }))
  .addEdge(START, "plan")
  .addConditionalEdges("plan", (s) => s.items.map((item) => new Send("work", { item })), ["work"])
  .addEdge("work", "report")
  .addEdge("report", END);

const Ask = Annotation.Root({
  question: Annotation(),
  answer: Annotation(),
  second: Annotation(),
  notes: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
export const asking = new StateGraph(Ask)
  .addNode("draft", () => ({ question: "Send the investor e-mail?", notes: ["drafted"] }))
  .addNode("approve", (s) => ({ answer: interrupt({ question: s.question, options: ["yes", "no"] }) }))
  .addNode("send", (s) => ({ notes: [`sent: ${s.answer}`] }))
  .addEdge(START, "draft")
  .addEdge("draft", "approve")
  .addEdge("approve", "send")
  .addEdge("send", END);

export const parallel = new StateGraph(Ask)
  .addNode("draft", () => ({ question: "Two approvals", notes: ["drafted"] }))
  .addNode("legal", () => ({ answer: interrupt("legal ok?") }))
  .addNode("finance", () => ({ second: interrupt("finance ok?") }))
  .addNode("done", (s) => ({ notes: [`${s.answer}/${s.second}`] }))
  .addEdge(START, "draft")
  .addEdge("draft", "legal")
  .addEdge("draft", "finance")
  .addEdge(["legal", "finance"], "done")
  .addEdge("done", END);

export const review = new StateGraph(Ask)
  .addNode("draft", () => ({ question: "Publish?", notes: ["drafted"] }))
  .addNode("review", () => ({ notes: ["reviewed"] }))
  .addNode("publish", () => ({ notes: ["published"] }))
  .addEdge(START, "draft")
  .addEdge("draft", "review")
  .addEdge("review", "publish")
  .addEdge("publish", END);

export const failing = new StateGraph(Ask)
  .addNode("draft", () => ({ question: "Price for Porto?", notes: ["drafted"] }))
  .addNode("price", () => {
    throw new Error("market data service unavailable for region 'Porto'");
  })
  .addEdge(START, "draft")
  .addEdge("draft", "price")
  .addEdge("price", END);

export const inner = new StateGraph(Ask)
  .addNode("research", (s) => ({ notes: [`researched ${s.question}`] }))
  .addNode("check", (s) => ({ answer: s.question.includes("wait") ? interrupt("inner ok?") : "auto" }))
  .addEdge(START, "research")
  .addEdge("research", "check")
  .addEdge("check", END);
export const nested = (innerGraph) =>
  new StateGraph(Ask)
    .addNode("draft", (s) => ({ notes: ["drafted"], question: s.question }))
    .addNode("inner", innerGraph)
    .addNode("finish", (s) => ({ notes: [`finished with ${s.answer}`] }))
    .addEdge(START, "draft")
    .addEdge("draft", "inner")
    .addEdge("inner", "finish")
    .addEdge("finish", END);

// RegExp values: in the state, in a task's result (a pull task's, a Send's), in a Send's argument,
// an interrupt's value and its resume, a Command's update; with and without flags, nested and alone
const Patterns = Annotation.Root({
  pattern: Annotation(),
  rules: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  nested: Annotation(),
});
export const patterns = new StateGraph(Patterns)
  .addNode("compile", () => ({
    pattern: /porto/,
    rules: [/^bak(e|ing)$/imsu, new RegExp("a/b\\d+", "y")],
    nested: { by: { city: /lisbo[an]/g }, list: [/x/, "x"], set: new Set([/s/i]), map: new Map([["m", /m$/]]) },
  }))
  .addNode("fan", (arg) => ({ rules: [arg.re] }))
  .addNode("refine", (s) => ({ pattern: new RegExp(s.pattern.source + "|braga", "gd"), rules: [/\s+/] }))
  .addNode("ask", (s) => ({ pattern: interrupt({ question: "keep?", pattern: s.pattern, all: [/a/, /b/u] }) }))
  .addEdge(START, "compile")
  .addConditionalEdges("compile", () => [new Send("fan", { re: /fan+/g }), new Send("fan", { re: /out/ })], ["fan"])
  .addEdge("fan", "refine")
  .addEdge("refine", "ask")
  .addEdge("ask", END);

// a list key set to [] by a fork (updateState on an older checkpoint), a plain list and a reducer's
const Lists = Annotation.Root({
  items: Annotation(),
  notes: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
export const listing = new StateGraph(Lists)
  .addNode("gather", () => ({ items: ["flour", "rye"], notes: ["gathered"] }))
  .addNode("use", (s) => ({ items: s.items.slice(1), notes: [`used ${s.items.length}`] }))
  .addNode("close", (s) => ({ notes: [`closed with ${s.items.length}`] }))
  .addEdge(START, "gather")
  .addEdge("gather", "use")
  .addEdge("use", "close")
  .addEdge("close", END);

export const cfg = (thread_id, extra = {}) => ({ configurable: { thread_id, ...extra } });

/** Each sample thread's app, compiled with `saver` as the thread was run. */
export function compiled(thread, saver) {
  const by = {
    "js-chat": chat, "js-fork": chat, "js-values": values, "js-sends": sends,
    "js-interrupt-waiting": asking, "js-interrupt-resumed": asking,
    "js-parallel-waiting": parallel, "js-parallel-resumed": parallel,
    "js-error": failing, "js-subgraph": nested(inner.compile()), "js-subgraph-waiting": nested(inner.compile()),
    "js-regexp": patterns, "js-regexp-waiting": patterns,
    "js-fork-empty": listing, "js-fork-empty-notes": listing,
    "js-subgraph-resumed": nested(inner.compile()),
  };
  if (thread === "js-breakpoint" || thread === "js-breakpoint-resumed") {
    return review.compile({ checkpointer: saver, interruptBefore: ["review"] });
  }
  return by[thread].compile({ checkpointer: saver });
}

// -- the record: LangGraph.js's own reading, in statectl's tagged JSON form ------------------------------
const MESSAGE_MODULES = {
  AIMessage: "ai", AIMessageChunk: "ai", HumanMessage: "human", HumanMessageChunk: "human",
  SystemMessage: "system", SystemMessageChunk: "system", ToolMessage: "tool", ToolMessageChunk: "tool",
  FunctionMessage: "function", ChatMessage: "chat", RemoveMessage: "modifier",
};

function typeName(id) {
  const last = id[id.length - 1];
  if (id.length >= 2 && id[id.length - 2] === "messages" && MESSAGE_MODULES[last]) {
    return `langchain_core.messages.${MESSAGE_MODULES[last]}.${last}`;
  }
  return id.join(".");
}

function tagged(v) {
  if (v === undefined || v === null) return null;
  if (typeof v === "number") return Number.isFinite(v) ? v : null; // (JSON writes NaN and Infinity as null)
  if (typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(tagged);
  if (v instanceof Set) return { $set: [...v].map(tagged) };
  if (v instanceof Map) {
    const entries = [...v];
    return entries.every(([k]) => typeof k === "string")
      ? Object.fromEntries(entries.map(([k, x]) => [k, tagged(x)]))
      : { $dict: entries.map(([k, x]) => [tagged(k), tagged(x)]) };
  }
  if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString("base64") };
  if (v instanceof RegExp) return { $type: "RegExp", args: [v.source, v.flags] };
  if (v instanceof Error) return { $type: "Error", args: [v.message] };
  if (v instanceof Date) return v.toJSON();
  if (typeof v.toJSON === "function" && v.lc_serializable) {
    const ser = v.toJSON();
    if (ser.lc === 1 && ser.type === "constructor") return { $type: typeName(ser.id), data: tagged(ser.kwargs) };
  }
  if (v.lg_name === "Send") return { $type: "langgraph.types.Send", args: [v.node, tagged(v.args)] };
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, tagged(x)]));
}

function interruptRecord(i) {
  return { id: i.id ?? null, value: tagged(i.value) };
}

export function record(snap) {
  const conf = snap.config.configurable;
  const parent = snap.parentConfig?.configurable ?? {};
  return {
    thread_id: conf.thread_id,
    checkpoint_ns: conf.checkpoint_ns ?? "",
    checkpoint_id: conf.checkpoint_id,
    parent_checkpoint_id: parent.checkpoint_id ?? null,
    created_at: snap.createdAt ?? null,
    metadata: tagged(snap.metadata),
    values: tagged(snap.values),
    next: [...snap.next],
    tasks: snap.tasks.map((t) => ({
      id: t.id,
      name: t.name,
      path: tagged(t.path ?? null),
      error: t.error == null ? null : tagged(t.error),
      interrupts: (t.interrupts ?? []).map(interruptRecord),
      result: tagged(t.result ?? null),
    })),
    interrupts: snap.tasks.flatMap((t) => t.interrupts ?? []).map(interruptRecord),
  };
}

export async function records(saver, threads) {
  const lines = [];
  for (const [graph, thread] of threads) {
    const namespaces = new Set();
    for await (const t of saver.list(cfg(thread))) namespaces.add(t.config.configurable.checkpoint_ns ?? "");
    for (const ns of [...namespaces].sort()) {
      for await (const snap of graph.getStateHistory(cfg(thread, { checkpoint_ns: ns }))) {
        lines.push(JSON.stringify(record(snap)));
      }
    }
  }
  return lines;
}

