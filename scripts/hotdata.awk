# hotdata.awk NMFILE TRACE: the data symbols of NMFILE (nm -S -n) that TRACE (valgrind lackey
# --trace-mem=yes) loads or stores, in the order of their first touch.
function hex(s,   i, n) {
  n = 0
  s = tolower(s)
  for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
  return n
}
FNR == NR {
  if (NF == 4 && $3 ~ /^[bBdDVu]$/) { k++; lo[k] = hex($1); hi[k] = lo[k] + hex($2); name[k] = $4 }
  next
}
$1 ~ /^[LSM]$/ {
  a = hex(substr($2, 1, index($2, ",") - 1))
  if (a < lo[1] || a >= hi[k]) next
  l = 1; h = k
  while (l < h) { m = int((l + h + 1) / 2); if (lo[m] <= a) l = m; else h = m - 1 }
  if (a < hi[l] && !seen[l]++) print name[l]
}
