import { runConfigStoreConformance } from '../../test/support/config-store-conformance.js';
import { MemoryConfigStore } from './index.js';

runConfigStoreConformance('MemoryConfigStore', () => new MemoryConfigStore());
