"""EmployeeBenefitsFlow: a fictional 2027 benefits enrollment where code owns every rule."""
