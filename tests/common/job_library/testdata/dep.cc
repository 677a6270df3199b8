// libkf-dep.so: a dependency of libkf-needs-dep.so that the loader cannot find.
int KfDepValue() {
  return 7;
}
