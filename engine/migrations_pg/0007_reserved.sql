-- Schema version 7 is another change's (run records); this file only keeps
-- the numbers 1..n on the search branch, and goes when that change merges.
SELECT 1;
