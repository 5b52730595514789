/**
 * The envelope every webview message travels in (extension host <-> webview), GitLens-style:
 * typed commands (webview -> host, no reply), requests (webview -> host, one reply with the same id)
 * and notifications (host -> webview). Each webview declares its own methods in protocol/webview-<name>.ts
 * with the helpers below, and both sides import those declarations, so a method name and its payload
 * are written once.
 */

/** A request: the webview asks, the host answers once with `R` (or an error message). */
export interface IpcRequestType<P, R> {
  readonly kind: 'request';
  readonly method: string;
  readonly _p?: P;
  readonly _r?: R;
}
/** A command: the webview tells the host to do something (open a file, open another panel). */
export interface IpcCommandType<P> {
  readonly kind: 'command';
  readonly method: string;
  readonly _p?: P;
}
/** A notification: the host pushes something (new data, "show this rollout"). */
export interface IpcNotificationType<P> {
  readonly kind: 'notification';
  readonly method: string;
  readonly _p?: P;
}

export function requestType<P, R>(method: string): IpcRequestType<P, R> {
  return { kind: 'request', method };
}
export function commandType<P>(method: string): IpcCommandType<P> {
  return { kind: 'command', method };
}
export function notificationType<P>(method: string): IpcNotificationType<P> {
  return { kind: 'notification', method };
}

export type ParamsOf<T> =
  T extends IpcRequestType<infer P, unknown> ? P : T extends IpcCommandType<infer P> ? P : T extends IpcNotificationType<infer P> ? P : never;
export type ResultOf<T> = T extends IpcRequestType<unknown, infer R> ? R : never;

/** Webview -> host. `id` is set for requests (the reply carries it back), absent for commands. */
export interface IpcMessage {
  method: string;
  params: unknown;
  id?: number;
}
/** Host -> webview reply to a request. */
export interface IpcResponse {
  method: typeof IPC_RESPONSE;
  id: number;
  result?: unknown;
  error?: string;
}
export const IPC_RESPONSE = 'ipc/response';
/** Webview -> host once its script has run: the host flushes what it buffered before then. */
export const IPC_READY = 'ipc/ready';

export function isIpcMessage(value: unknown): value is IpcMessage {
  return typeof value === 'object' && value !== null && typeof (value as IpcMessage).method === 'string';
}

/**
 * What every webview shares for recovery (each webview's protocol includes these): the host pushes the
 * daemon's state when it changes (a webview in an error state then reloads by itself), and an error
 * state's "Start Daemon" button asks the host to run the extension's Start Daemon command.
 */
export const DaemonMessages = {
  startDaemon: commandType<Record<string, never>>('daemon/startDaemon'),
  state: notificationType<{ up: boolean }>('daemon/state'),
} as const;
