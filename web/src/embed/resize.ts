// The embed tells its host page how tall its content is, whenever that changes:
// `{type: "servesim:resize", height, ready}` to the parent window. `embed.js` on the host page
// sizes the iframe to it; without that script the iframe keeps the size its snippet gives.
// `ready` is true once the results are drawn: the builder takes only that height as measured.

export const RESIZE_MESSAGE = 'servesim:resize';

export interface ResizeMessage {
  type: typeof RESIZE_MESSAGE;
  /** The content's height in CSS pixels. */
  height: number;
  /** The results (or the inspector's recording) are on screen: the height is final. */
  ready: boolean;
}

let ready = false;
let send: (force: boolean) => void = () => {};

/** Starts reporting the content height to the parent window (nothing when not framed). */
export function reportHeight(): void {
  if (window.parent === window) return;
  let last = -1;
  send = (force) => {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height === last && !force) return;
    last = height;
    // Any origin may host an embed; the message says nothing but the height.
    window.parent.postMessage({ type: RESIZE_MESSAGE, height, ready } satisfies ResizeMessage, '*');
  };
  new ResizeObserver(() => send(false)).observe(document.documentElement);
  send(false);
}

/** The content is final (results drawn): says so, with its height, after the next layout. */
export function announceReady(): void {
  ready = true;
  requestAnimationFrame(() => send(true));
}
