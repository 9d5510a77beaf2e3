/** Pure metric functions (no I/O): classification, cost, and the statistics behind them. */
export * from './classification.js';
export * from './cost.js';
export * from './stats.js';
