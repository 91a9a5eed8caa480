// The kubelet's WebSocket streaming protocols (k8s.io/apimachinery wsstream): every message is
// one channel's data, prefixed by the channel number — 0 stdin, 1 stdout, 2 stderr, 3 error
// (the Status), 4 resize — as a byte (binary protocols) or an ASCII digit followed by base64
// (the base64 ones). v5.channel.k8s.io, what current kubectl asks for first, adds the CLOSE
// signal: the message [255, channel] says the client has no more data for that channel (its
// stdin's end). The server picks the first protocol the client offers that it knows, and tells
// the client it is ready with an empty message on its lowest writable channel.

import { PassThrough, Writable } from "node:stream";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocket, WebSocketServer } from "ws";
import type { RemoteStreams, StreamStatus } from "./remote-command.ts";
import { v1StatusText } from "./remote-command.ts";

export const V5_PROTOCOL = "v5.channel.k8s.io";
export const V4_PROTOCOL = "v4.channel.k8s.io";
export const V4_BASE64_PROTOCOL = "v4.base64.channel.k8s.io";
export const CHANNEL_PROTOCOL = "channel.k8s.io";
export const BASE64_CHANNEL_PROTOCOL = "base64.channel.k8s.io";

/** What this endpoint speaks, newest first. */
export const WEBSOCKET_PROTOCOLS = [
  V5_PROTOCOL,
  V4_PROTOCOL,
  V4_BASE64_PROTOCOL,
  CHANNEL_PROTOCOL,
  BASE64_CHANNEL_PROTOCOL,
] as const;

export const Channel = { STDIN: 0, STDOUT: 1, STDERR: 2, ERROR: 3, RESIZE: 4 } as const;
/** v5's CLOSE signal: [CLOSE_SIGNAL, channel]. */
export const CLOSE_SIGNAL = 255;

/** The client's first offered protocol this endpoint knows (wsstream's handshake); "" for none offered. */
export function selectProtocol(offered: Iterable<string>): string | false {
  const list = [...offered];
  if (list.length === 0) return "";
  return list.find((p) => (WEBSOCKET_PROTOCOLS as readonly string[]).includes(p)) ?? false;
}

function isBase64(protocol: string): boolean {
  return protocol === V4_BASE64_PROTOCOL || protocol === BASE64_CHANNEL_PROTOCOL;
}

/** One outgoing message of `channel` in the protocol's encoding. */
export function encodeMessage(protocol: string, channel: number, data: Buffer): Buffer | string {
  if (isBase64(protocol)) return String.fromCharCode(48 + channel) + data.toString("base64");
  return Buffer.concat([Buffer.from([channel]), data]);
}

/** One incoming message: its channel and data, or a CLOSE signal for a channel (v5). */
export function decodeMessage(
  protocol: string,
  message: Buffer,
  isBinary: boolean,
): { channel: number; data: Buffer } | { close: number } | undefined {
  if (message.length === 0) return undefined;
  if (protocol === V5_PROTOCOL && message[0] === CLOSE_SIGNAL) {
    return message.length >= 2 ? { close: message[1]! } : undefined;
  }
  if (isBase64(protocol)) {
    const text = isBinary ? message.toString("latin1") : message.toString("utf8");
    return { channel: text.charCodeAt(0) - 48, data: Buffer.from(text.slice(1), "base64") };
  }
  return { channel: message[0]!, data: message.subarray(1) };
}

let server: WebSocketServer | undefined;

/** ws is loaded on the first exec, not with every node (bench:rss counts a node's start). */
async function websocketServer(): Promise<WebSocketServer> {
  if (!server) {
    const { WebSocketServer } = await import("ws");
    server = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      handleProtocols: (protocols) => selectProtocol(protocols) || false,
    });
  }
  return server;
}

/** Whether the request asks for a WebSocket (wsstream.IsWebSocketRequest). */
export function isWebSocketRequest(req: IncomingMessage): boolean {
  const upgrade = String(req.headers.upgrade ?? "").toLowerCase();
  const connection = String(req.headers.connection ?? "").toLowerCase();
  return upgrade === "websocket" && /(^|,)\s*upgrade\s*($|,)/.test(connection);
}

/**
 * Completes the WebSocket handshake and hands back the session's streams; undefined when the
 * client offers no protocol this endpoint speaks (ws then answers 400).
 */
export async function openChannels(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  wants: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean },
): Promise<RemoteStreams | undefined> {
  const wss = await websocketServer();
  const offered = String(req.headers["sec-websocket-protocol"] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
  if (selectProtocol(offered) === false) {
    socket.end(
      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
        `requested protocol(s) are not supported: ${JSON.stringify(offered)}; supports ${JSON.stringify(WEBSOCKET_PROTOCOLS)}\n`,
    );
    return undefined;
  }
  const ws = await new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));
  return channelStreams(ws, wants);
}

function channelStreams(
  ws: WebSocket,
  wants: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean },
): RemoteStreams {
  const protocol = ws.protocol;
  const gone = new AbortController();
  const send = (channel: number, data: Buffer): Promise<void> =>
    new Promise((resolve, reject) => {
      if (ws.readyState !== ws.OPEN) return reject(new Error("the client went away"));
      ws.send(encodeMessage(protocol, channel, data), (error) => (error ? reject(error) : resolve()));
    });
  const writer = (channel: number): Writable => {
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        send(channel, chunk).then(() => callback(), callback);
      },
    });
    stream.on("error", () => undefined);
    return stream;
  };
  const stdin = wants.stdin ? new PassThrough() : undefined;
  const resize = new PassThrough();
  const inputs: Record<number, PassThrough | undefined> = {
    [Channel.STDIN]: stdin,
    [Channel.RESIZE]: resize,
  };
  ws.on("message", (message: Buffer, isBinary: boolean) => {
    const decoded = decodeMessage(protocol, message, isBinary);
    if (!decoded) return;
    if ("close" in decoded) {
      inputs[decoded.close]?.end();
      return;
    }
    const input = inputs[decoded.channel];
    if (input && !input.writableEnded) input.write(decoded.data);
  });
  ws.on("error", () => undefined);
  ws.on("close", () => {
    stdin?.end();
    resize.end();
    gone.abort();
  });
  const stdout = wants.stdout ? writer(Channel.STDOUT) : undefined;
  const stderr = wants.stderr && !wants.tty ? writer(Channel.STDERR) : undefined;
  // The kubelet's "connection established" notice: an empty message on the lowest writable channel.
  void send(
    wants.stdout ? Channel.STDOUT : wants.stderr ? Channel.STDERR : Channel.ERROR,
    Buffer.alloc(0),
  ).catch(() => undefined);
  const v4 = protocol === V5_PROTOCOL || protocol === V4_PROTOCOL || protocol === V4_BASE64_PROTOCOL;
  return {
    protocol,
    ...(stdin ? { stdin } : {}),
    ...(stdout ? { stdout } : {}),
    ...(stderr ? { stderr } : {}),
    resize,
    gone: gone.signal,
    writeStatus: async (status: StreamStatus) => {
      const body = v4 ? JSON.stringify(status) : v1StatusText(status);
      if (body !== "") await send(Channel.ERROR, Buffer.from(body, "utf8")).catch(() => undefined);
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (ws.readyState === ws.CLOSED) return resolve();
        ws.once("close", () => resolve());
        ws.close(1000);
        // A client that never answers the close handshake is cut off.
        setTimeout(() => ws.terminate(), 5000).unref();
      }),
  };
}
