"""MedicalFlow: symptoms, then a booking with a demo doctor, then a closing line."""
