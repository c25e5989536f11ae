// A small chat page on the AI SDK's own React hook, `useChat` (@ai-sdk/react), talking to
// picoflow's `POST /ai-sdk/{flowName}` (G2). Nothing here knows picoflow beyond the URL: the
// parts are what the SDK builds from the UI message stream, and an approval is answered with
// the SDK's `addToolApprovalResponse`, which `sendAutomaticallyWhen` sends on at once.
//
// ?flow=HotelFlow picks the flow; ?config={...} is the new session's config (F7), sent in the
// request body as `config`. tests/server/protocols/test_g3_use_chat_browser.py drives it.
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  getToolName,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";
import { useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(window.location.search);
const flow = params.get("flow") || "HotelFlow";
const config = params.get("config") ? JSON.parse(params.get("config")) : undefined;

function ToolPart({ part, onAnswer }) {
  const name = getToolName(part);
  return (
    <div className="tool" data-tool={name} data-state={part.state}>
      <div className="call">
        {name}({JSON.stringify(part.input)})
      </div>
      {part.state === "approval-requested" && (
        <div className="approval">
          <span>This needs your approval.</span>{" "}
          <button type="button" onClick={() => onAnswer(part.approval.id, true)}>
            Approve
          </button>{" "}
          <button type="button" onClick={() => onAnswer(part.approval.id, false)}>
            Reject
          </button>
        </div>
      )}
      {part.state === "approval-responded" && (
        <div className="answered">{part.approval.approved ? "Approved" : "Rejected"}</div>
      )}
      {part.state === "output-available" && <div className="output">{String(part.output)}</div>}
      {part.state === "output-denied" && <div className="denied">Not run: refused.</div>}
      {part.state === "output-error" && <div className="failed">{part.errorText}</div>}
    </div>
  );
}

function Message({ message, onAnswer }) {
  return (
    <li className={`msg ${message.role}`} data-id={message.id}>
      {message.parts.map((part, i) => {
        if (part.type === "text") return <p key={i} className="text">{part.text}</p>;
        if (isToolUIPart(part)) return <ToolPart key={i} part={part} onAnswer={onAnswer} />;
        return null; // data-step and data-state show in the header
      })}
    </li>
  );
}

/** The newest `data-state` part of the conversation: the step, the session, `completed`. */
function latestState(messages) {
  for (let m = messages.length - 1; m >= 0; m--) {
    const part = messages[m].parts.findLast((p) => p.type === "data-state");
    if (part) return part.data;
  }
  return null;
}

function App() {
  const [transport] = useState(
    () => new DefaultChatTransport({ api: `/ai-sdk/${flow}`, body: config ? { config } : {} }),
  );
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  const state = latestState(messages);
  const busy = status === "submitted" || status === "streaming";

  function submit(event) {
    event.preventDefault();
    if (!input.trim() || busy) return;
    sendMessage({ text: input });
    setInput("");
  }

  return (
    <main data-status={status} data-session={state?.session ?? ""}>
      <h1>{flow}</h1>
      {state && (
        <p id="step">
          Step: {state.step}
          {state.completed ? " (completed)" : ""}
        </p>
      )}
      <ul id="messages">
        {messages.map((message) => (
          <Message
            key={message.id}
            message={message}
            onAnswer={(id, approved) => addToolApprovalResponse({ id, approved })}
          />
        ))}
      </ul>
      {error && <p role="alert">{error.message}</p>}
      <form onSubmit={submit}>
        <input
          id="input"
          value={input}
          onChange={(e) => setInput(e.target.value)}
          placeholder="Message"
          autoComplete="off"
        />
        <button type="submit" disabled={busy}>
          Send
        </button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
