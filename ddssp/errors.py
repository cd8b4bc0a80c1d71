"""Exception types a user can cause. The CLI prints their message in one line and exits non-zero."""


class DDSSPError(Exception):
    """Base class for every error caused by input (data, schema, parameters, files)."""


class SchemaError(DDSSPError):
    """The schema, the data or a domain file do not fit together."""


class DataError(DDSSPError):
    """The input table cannot be read or is malformed."""


class PrivacyParameterError(DDSSPError):
    """eps, delta or rho outside their valid range."""


class BudgetExceededError(DDSSPError):
    """A mechanism tried to spend more privacy budget than is left."""


class ReleaseFileError(DDSSPError):
    """A release file is missing, corrupt, tampered with, or of an unknown format version."""


class WorkloadError(DDSSPError):
    """A workload or a benchmark spec is invalid."""


class OutputExistsError(DDSSPError):
    """An output path exists and --force was not given (or it is one of the inputs)."""
