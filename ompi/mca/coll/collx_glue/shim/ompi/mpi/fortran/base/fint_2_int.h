/*
 * Stand-in for an Open MPI internal header that some distributions (Debian
 * 12) do not ship although ompi/op/op.h includes it.  op.h only needs
 * OMPI_INT_2_FINT; it is the identity when a Fortran INTEGER is a C int,
 * which we check.  Found only after Open MPI's own include directories
 * (-idirafter), so a real copy always wins.
 */
#ifndef COLLX_SHIM_FINT_2_INT_H
#define COLLX_SHIM_FINT_2_INT_H

#if OMPI_SIZEOF_FORTRAN_INTEGER != SIZEOF_INT
#error "collx shim: Fortran INTEGER is not a C int here; install Open MPI's fint_2_int.h"
#endif

#define OMPI_INT_2_FINT(a) (a)
#define OMPI_FINT_2_INT(a) (a)

#endif
