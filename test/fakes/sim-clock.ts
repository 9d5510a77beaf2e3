/**
 * The simulated clock the tests use; it lives in the product tree (shared/lib/sim-clock.ts)
 * because the capacity model in bench/cloud/ runs on it too.
 */
export { SimClock, SimDeadlockError, SimTimeLimitError, SimTimer } from '../../shared/lib/sim-clock.js';
