// Loaded first (a separate, tiny entry): starts the engine worker and its wasm download while
// the page's main script is still loading. The main script picks the engine up in boot().

import { Engine } from './engine';

const engine = new Engine();
(globalThis as { __servesimEarly?: unknown }).__servesimEarly = { engine, hello: engine.hello() };
