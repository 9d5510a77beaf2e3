import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startVendorFake, type VendorFake } from './vendor-fake.js';

/**
 * One vendor fake for a test file (or describe block): started before its tests, closed after,
 * and reset (requests and handler) before each test. The returned object forwards to the
 * running fake, so tests use it as they would the fake itself.
 */
export function useVendorFake(): VendorFake {
  let fake: VendorFake | undefined;
  beforeAll(async () => {
    fake = await startVendorFake();
  });
  afterAll(async () => {
    await fake?.close();
  });
  beforeEach(() => {
    fake!.reset();
    fake!.setHandler();
  });
  return new Proxy({} as VendorFake, {
    get(_target, property) {
      if (!fake) throw new Error('the vendor fake is used outside a test');
      const value = Reflect.get(fake, property, fake);
      return typeof value === 'function' ? value.bind(fake) : value;
    },
  });
}
