// What node gives code besides the packs, for the type check: loosely typed
// on purpose (the check is about calls into packs, and full Node typings
// cost ten times the check). Any module imports as `any`. The packs,
// `PackError` and `packhost` are in the declarations beside it.
declare module "*";

declare var console: {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
  table(data: unknown, columns?: string[]): void;
  dir(item: unknown, options?: unknown): void;
  time(label?: string): void;
  timeEnd(label?: string): void;
};
declare var process: {
  env: Record<string, string | undefined>;
  argv: string[];
  pid: number;
  platform: string;
  version: string;
  exitCode: number | undefined;
  cwd(): string;
  exit(code?: number): never;
  hrtime: { bigint(): bigint };
  memoryUsage(): Record<string, number>;
  stdout: { write(text: string): boolean };
  stderr: { write(text: string): boolean };
  on(event: string, listener: (...args: any[]) => void): unknown;
};
declare function setTimeout(callback: (...args: any[]) => void, ms?: number, ...args: any[]): any;
declare function clearTimeout(handle: any): void;
declare function setInterval(callback: (...args: any[]) => void, ms?: number, ...args: any[]): any;
declare function clearInterval(handle: any): void;
declare function setImmediate(callback: (...args: any[]) => void, ...args: any[]): any;
declare function queueMicrotask(callback: () => void): void;
declare function structuredClone<T>(value: T): T;
declare function fetch(input: string | URL, init?: any): Promise<any>;
declare var Buffer: any;
declare class URL {
  constructor(url: string, base?: string | URL);
  href: string; protocol: string; host: string; hostname: string; port: string;
  pathname: string; search: string; hash: string; origin: string;
  searchParams: URLSearchParams;
  toString(): string;
}
declare class URLSearchParams {
  constructor(init?: string | Record<string, string> | [string, string][]);
  get(name: string): string | null;
  set(name: string, value: string): void;
  append(name: string, value: string): void;
  has(name: string): boolean;
  toString(): string;
}
declare class TextEncoder { encode(input?: string): Uint8Array; }
declare class TextDecoder { constructor(label?: string); decode(input?: ArrayBuffer | ArrayBufferView): string; }
declare class AbortController { readonly signal: any; abort(reason?: unknown): void; }
