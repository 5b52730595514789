/**
 * The webview's side of the typed IPC (protocol/webview-ipc.ts): sends requests and commands to the
 * extension host through acquireVsCodeApi(), matches replies to requests by id, dispatches notifications,
 * and keeps the view state with getState/setState so a restored panel reopens where it was.
 */
import { IPC_READY, IPC_RESPONSE, type IpcCommandType, type IpcNotificationType, type IpcRequestType, type IpcResponse } from '../../protocol/webview-ipc.js';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

export class HostConnection<S> {
  private readonly api: VsCodeApi = acquireVsCodeApi();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly handlers = new Map<string, (params: unknown) => void>();

  constructor() {
    window.addEventListener('message', (event: MessageEvent) => this.receive(event.data));
  }

  /** Tell the host the listeners are in place (it flushes messages it held back until now). */
  ready(): void {
    this.api.postMessage({ method: IPC_READY, params: {} });
  }

  request<P, R>(type: IpcRequestType<P, R>, params: P): Promise<R> {
    const id = this.nextId++;
    return new Promise<R>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.api.postMessage({ id, method: type.method, params });
    });
  }

  command<P>(type: IpcCommandType<P>, params: P): void {
    this.api.postMessage({ method: type.method, params });
  }

  onNotification<P>(type: IpcNotificationType<P>, handler: (params: P) => void): void {
    this.handlers.set(type.method, handler as (params: unknown) => void);
  }

  /** Requests sent and not answered yet. */
  get waiting(): number {
    return this.pending.size;
  }

  get state(): S | undefined {
    return (this.api.getState() as S | undefined) ?? undefined;
  }
  set state(value: S) {
    this.api.setState(value);
  }

  private receive(data: unknown): void {
    if (typeof data !== 'object' || data === null) return;
    const msg = data as { method?: string; params?: unknown };
    if (msg.method === IPC_RESPONSE) {
      const { id, result, error } = data as IpcResponse;
      const waiter = this.pending.get(id);
      if (!waiter) return;
      this.pending.delete(id);
      if (error !== undefined) waiter.reject(new Error(error));
      else waiter.resolve(result);
      return;
    }
    if (msg.method) this.handlers.get(msg.method)?.(msg.params);
  }
}
