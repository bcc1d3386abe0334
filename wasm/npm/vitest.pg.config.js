import { defineConfig } from "vitest/config";

// The PostgreSQL tests (test-pg/), on the server AGENTSTATE_TEST_PG names
// (.ci/run starts one with .ci/with-postgres): `npm run test:pg`.
export default defineConfig({
  test: {
    globals: true,
    include: ["test-pg/**/*.test.js"],
    pool: "forks",
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
