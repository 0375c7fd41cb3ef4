/**
 * @module toolbus/langchain: LangChain tools as toolbus tools (`LangChainToolAdapter`) and toolbus tools
 * as LangChain tools (`toLangChainTool`). Requires the optional peer `@langchain/core`
 * (`npm install @langchain/core`).
 */
export { LangChainToolAdapter } from './langchain-tool-adapter.js';
export type { LangChainToolAdapterOptions, LangChainToolLike } from './langchain-tool-adapter.js';
export { toLangChainTool } from './to-langchain-tool.js';
export type { ToLangChainToolOptions } from './to-langchain-tool.js';
