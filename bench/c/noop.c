/* noop.c: a process that does nothing, built static: the cost of fork/exec/exit alone. */
int main(void) { return 0; }
