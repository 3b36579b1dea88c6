// With BATON_SEPARATE_COMPILATION defined for every unit of the program, exactly one unit compiles
// baton's compiled parts: this one. This program uses neither AWS store, so it compiles only the
// core part; a program that uses S3 or DynamoDB adds <baton/src/s3.hpp> or
// <baton/src/dynamodb.hpp> (or includes <baton/src.hpp>, every part). Header-only (the default),
// this unit is empty.
#ifdef BATON_SEPARATE_COMPILATION
#include <baton/src/core.hpp>
#endif
