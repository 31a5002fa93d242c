import type { ServerResponse } from 'node:http';

/**
 * One AbortController per request, aborted when its client goes away before the answer
 * is written or when shutdown cancels what is still running. Kept in a set rather than
 * chained with AbortSignal.any, which costs an event dispatch on every request.
 */
export function createCancellation(shutdownSignal: AbortSignal) {
  const open = new Set<AbortController>();
  shutdownSignal.addEventListener('abort', () => {
    for (const controller of open) controller.abort(shutdownSignal.reason);
  });
  function begin(res: ServerResponse): AbortController {
    const controller = new AbortController();
    if (shutdownSignal.aborted) {
      controller.abort(shutdownSignal.reason);
      return controller;
    }
    // A client gone before this point (while its body was read) fired 'close' already.
    if (res.closed && !res.writableFinished) {
      controller.abort();
      return controller;
    }
    open.add(controller);
    res.once('close', () => {
      open.delete(controller);
      if (!res.writableFinished) controller.abort();
    });
    return controller;
  }
  return {
    begin,
    /**
     * The request's controller made on first use: a request that never reads its signal
     * and is never cancelled (`{ version }`, no statement) makes none. Made late, it is
     * aborted at once if the client went away or shutdown began meanwhile, as `begin` is.
     */
    lazy(res: ServerResponse): LazyCancellation {
      return new LazyController(begin, res);
    },
  };
}

/** A request's cancellation whose AbortController is made when first read. */
export interface LazyCancellation {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

/** One object per request, its accessors on the prototype (no closures per request). */
class LazyController implements LazyCancellation {
  #controller: AbortController | undefined;
  constructor(
    private readonly begin: (res: ServerResponse) => AbortController,
    private readonly res: ServerResponse,
  ) {}
  get signal(): AbortSignal {
    return (this.#controller ??= this.begin(this.res)).signal;
  }
  abort(reason?: unknown): void {
    (this.#controller ??= this.begin(this.res)).abort(reason);
  }
}
