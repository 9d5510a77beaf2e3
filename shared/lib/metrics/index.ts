/** Pure metric functions (no I/O): classification, cost, and the statistics behind them. */
export * from './agreement.js';
export * from './annotators.js';
export * from './bias.js';
export * from './calibration.js';
export * from './classification.js';
export * from './cost.js';
export * from './intervals.js';
export * from './reliability.js';
export * from './scores.js';
export * from './stats.js';
