// Empty: the driver below only provides the executable's entry point when fuzzing.
