// An ACP client on the official TypeScript SDK (@agentclientprotocol/sdk), driving the agent
// given as JSON in argv[2] through a tool turn with a permission, then a turn it cancels.
// Prints one JSON summary on stdout. Run by tests/acp_agent/test_node_client.py.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const require = createRequire(process.env.ACP_PEERS_DIR + "/package.json");
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);

const [command, ...args] = JSON.parse(process.argv[2]);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], cwd: process.env.ACP_CWD });

const updates = [];
const permissions = [];
let onUpdate = () => {};

const app = acp
  .client({ name: "tooloop-test-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
    onUpdate(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const summary = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "tooloop-test-client", version: "1.0.0" },
  });
  const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: process.env.ACP_CWD, mcpServers: [] });

  const toolTurn = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "delete the file" }],
  });
  const afterToolTurn = updates.length;

  // The second turn hangs in the model after its first words: cancel it once they arrive.
  const streaming = new Promise((resolve) => {
    onUpdate = (params) => {
      if (params.update.sessionUpdate === "agent_message_chunk") resolve();
    };
  });
  const cancelled = ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "a long story" }],
  });
  await streaming;
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  const cancelTurn = await cancelled;
  const countAtAnswer = updates.length;
  await new Promise((resolve) => setTimeout(resolve, 300));
  return {
    protocolVersion: init.protocolVersion,
    agentName: init.agentInfo?.name,
    sessionId,
    toolTurn,
    cancelTurn,
    toolUpdates: updates.slice(0, afterToolTurn).map((n) => n.update),
    cancelUpdates: updates.slice(afterToolTurn).map((n) => n.update),
    updatesAfterAnswer: updates.length - countAtAnswer,
    sessionIds: [...new Set(updates.map((n) => n.sessionId))],
    permissions,
  };
});
child.stdin.end();
process.stdout.write(JSON.stringify(summary) + "\n");
process.exit(0);
