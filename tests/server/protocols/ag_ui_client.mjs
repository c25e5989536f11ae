// G1, G3 with the real client: @ag-ui/client's HttpAgent (pinned in tests/package.json) holds
// a conversation with picoflow's /ag-ui route. Its verifier rejects any event out of order, so
// a run that resolves is a run the protocol accepts. Prints one JSON report for the pytest
// test (test_g3_real_clients.py) to check; one node process for every case.
import { randomUUID } from "node:crypto";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [base, flow] = process.argv.slice(2);

function agentFor(flowName, threadId = randomUUID()) {
  return new HttpAgent({ url: `${base}/ag-ui/${flowName}`, threadId });
}

async function run(agent, text, parameters = {}) {
  if (text !== undefined) {
    agent.addMessage({ id: randomUUID(), role: "user", content: text });
  }
  const types = [];
  const errors = [];
  const subscriber = {
    onEvent: ({ event }) => { types.push(event.type); },
    onRunErrorEvent: ({ event }) => { errors.push({ code: event.code, message: event.message }); },
  };
  let failure = null;
  try {
    await agent.runAgent({ runId: randomUUID(), ...parameters }, subscriber);
  } catch (error) {
    failure = String(error && error.message ? error.message : error);
  }
  return {
    types,
    errors,
    failure,
    state: agent.state,
    interrupts: agent.pendingInterrupts.map((i) => ({ id: i.id, reason: i.reason, toolCallId: i.toolCallId })),
    messages: agent.messages.map((m) => ({ role: m.role, content: m.content ?? null, toolCallId: m.toolCallId ?? null, toolCalls: (m.toolCalls ?? []).map((c) => c.function.name) })),
  };
}

const agent = agentFor(flow);
const booked = await run(agent, "book Inn 100");
const asked = await run(agent, "book Big 900");
const resume = buildResumeArray(agent.pendingInterrupts, Object.fromEntries(
  agent.pendingInterrupts.map((i) => [i.id, { status: "resolved", payload: { decision: "approve" } }]),
));
const approved = await run(agent, undefined, { resume });
const refused = await run(agent, "   ");
const unknown = await run(agentFor("NoSuchFlow"), "hello");
const badThread = await run(agentFor(flow, "not a valid id!"), "hello");

process.stdout.write(JSON.stringify({ booked, asked, approved, refused, unknown, badThread }));
