// Fails the test run unless vitest's JSON report shows every test passed,
// none skipped or left to do, and the official LangGraph.js conformance
// suite ran all of its 726 tests (specTest + deltaChannelHistoryTests of
// @langchain/langgraph-checkpoint-validation 1.1.1).
import fs from "node:fs";

// With the argument "pg": the PostgreSQL run (npm run test:pg), whose
// conformance file is test-pg/validation.test.js.
const pg = process.argv[2] === "pg";
const report = JSON.parse(fs.readFileSync(new URL(pg ? "../test-results/vitest-pg.json" : "../test-results/vitest.json", import.meta.url), "utf8"));
const problems = [];
if (report.numFailedTests !== 0) problems.push(`${report.numFailedTests} failed`);
if (report.numPendingTests !== 0) problems.push(`${report.numPendingTests} skipped`);
if (report.numTodoTests !== 0) problems.push(`${report.numTodoTests} todo`);
const validation = report.testResults.find((f) => f.name.endsWith(pg ? "test-pg/validation.test.js" : "test/validation.test.js"));
const passed = validation?.assertionResults.filter((a) => a.status === "passed").length ?? 0;
const skipped = validation?.assertionResults.filter((a) => a.status !== "passed" && a.status !== "failed").length ?? 0;
if (passed !== 726 || skipped !== 0) problems.push(`conformance suite: ${passed} passed, ${skipped} skipped (want 726 and 0)`);
const mustRun = "should only store channel_values that have changed (based on newVersions)";
if (!validation?.assertionResults.some((a) => a.title === mustRun && a.status === "passed")) problems.push(`"${mustRun}" did not pass`);
if (problems.length > 0) {
  console.error(`agentstate npm tests${pg ? " (PostgreSQL)" : ""}: ${problems.join("; ")}`);
  process.exit(1);
}
console.log(`${pg ? "PostgreSQL: " : ""}${report.numPassedTests} passed, 0 failed, 0 skipped (conformance: ${passed}/726)`);
