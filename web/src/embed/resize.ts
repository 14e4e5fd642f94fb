// The embed tells its host page how tall its content is, whenever that changes:
// `{type: "servesim:resize", height}` to the parent window. `embed.js` on the host page
// sizes the iframe to it; without that script the iframe keeps the size its snippet gives.

export const RESIZE_MESSAGE = 'servesim:resize';

export interface ResizeMessage {
  type: typeof RESIZE_MESSAGE;
  /** The content's height in CSS pixels. */
  height: number;
}

/** Starts reporting the content height to the parent window (nothing when not framed). */
export function reportHeight(): void {
  if (window.parent === window) return;
  let last = -1;
  const send = () => {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height === last) return;
    last = height;
    // Any origin may host an embed; the message says nothing but the height.
    window.parent.postMessage({ type: RESIZE_MESSAGE, height } satisfies ResizeMessage, '*');
  };
  new ResizeObserver(send).observe(document.documentElement);
  send();
}
