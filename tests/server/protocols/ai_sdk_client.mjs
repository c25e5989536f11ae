// G2, G3 with the real client: the `ai` package's DefaultChatTransport (what useChat uses)
// sends the chat request and reads picoflow's UI message stream; readUIMessageStream folds the
// chunks into UIMessages exactly as useChat does, so the parts here are what a UI renders.
// Prints one JSON report for the pytest test (test_g3_real_clients.py); one node process.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [base, flow] = process.argv.slice(2);

function transportFor(flowName) {
  return new DefaultChatTransport({ api: `${base}/ai-sdk/${flowName}` });
}

let counter = 0;
const newId = () => `msg${String(++counter).padStart(13, "0")}`;

async function send(transport, chatId, messages, trigger = "submit-message") {
  let stream;
  try {
    stream = await transport.sendMessages({ chatId, messages, trigger, messageId: undefined, abortSignal: undefined });
  } catch (error) {
    return { failure: String(error.message ?? error), message: null, errors: [] };
  }
  const last = messages[messages.length - 1];
  const errors = [];
  let message = null;
  const continued = last && last.role === "assistant" ? structuredClone(last) : undefined;
  for await (const m of readUIMessageStream({ stream, message: continued, onError: (e) => errors.push(String(e.message ?? e)), terminateOnError: false })) {
    message = m;
  }
  return { failure: null, message, errors };
}

function user(text) {
  return { id: newId(), role: "user", parts: [{ type: "text", text }] };
}

const transport = transportFor(flow);
const chatId = "Xq7fT2mLp9sVb3Kd";
const history = [user("book Inn 100")];
const booked = await send(transport, chatId, history);
history.push(booked.message, user("book Big 900"));
const asked = await send(transport, chatId, history);
// What addToolApprovalResponse does: the part awaiting approval becomes approval-responded.
const answered = structuredClone(asked.message);
for (const part of answered.parts) {
  if (part.state === "approval-requested") {
    part.state = "approval-responded";
    part.approval = { ...part.approval, approved: true };
  }
}
history.push(answered);
const approved = await send(transport, chatId, history);
const unknown = await send(transportFor("NoSuchFlow"), chatId, [user("hello")]);
const failed = await send(transport, chatId, [...history.slice(0, -1), user("   ")]);
// useChat({ resume: true }) on a page load: nothing is streaming now, so the SDK gets null.
const reconnected = await transport.reconnectToStream({ chatId });

process.stdout.write(JSON.stringify({ booked, asked, approved, unknown, failed, reconnected }));
