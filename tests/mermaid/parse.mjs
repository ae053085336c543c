// Parse Mermaid texts with Mermaid's own parser (under jsdom). Reads a JSON list of texts on
// stdin; writes a JSON list of {ok, type, vertices: {id: label}, edges: [[from, to, stroke]]}
// or {ok: false, error}.
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const text of JSON.parse(input)) {
  try {
    await mermaid.parse(text);
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const vertices = {};
    for (const [id, v] of diagram.db.getVertices()) vertices[id] = v.text;
    const edges = diagram.db.getEdges().map((e) => [e.start, e.end, e.stroke]);
    results.push({ ok: true, type: diagram.type, vertices, edges });
  } catch (e) {
    results.push({ ok: false, error: String((e && e.message) || e).slice(0, 800) });
  }
}
process.stdout.write(JSON.stringify(results));
