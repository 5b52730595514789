/**
 * Routes one webview message on the host side, without the vscode API (the panel and the webview tests
 * share it): a request is answered with an `ipc/response` carrying its id (the result, or the error's
 * message), a command is handed to `onCommand`, and `ipc/ready` to `onReady`.
 */
import { IPC_READY, IPC_RESPONSE, isIpcMessage, type IpcResponse } from '../../protocol/webview-ipc.js';
import type { RequestHandlers } from './data.js';

export interface RouterOptions {
  handlers: RequestHandlers;
  post: (message: unknown) => void;
  onCommand: (method: string, params: unknown) => void | Promise<void>;
  onReady: () => void;
  onCommandError?: (err: Error) => void;
}

export async function routeWebviewMessage(message: unknown, o: RouterOptions): Promise<void> {
  if (!isIpcMessage(message)) return;
  if (message.method === IPC_READY) {
    o.onReady();
    return;
  }
  if (message.id === undefined) {
    try {
      await o.onCommand(message.method, message.params);
    } catch (err) {
      o.onCommandError?.(err as Error);
    }
    return;
  }
  const reply: IpcResponse = { method: IPC_RESPONSE, id: message.id };
  const handler = o.handlers.get(message.method);
  try {
    if (!handler) throw new Error(`unknown request '${message.method}'`);
    reply.result = await handler(message.params);
  } catch (err) {
    reply.error = (err as Error).message;
  }
  o.post(reply);
}
